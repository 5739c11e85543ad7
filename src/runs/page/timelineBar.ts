import { stepFacts, type Trajectory } from '../../leaf/trajectory.js';
import { formatCount, formatDuration } from './html.js';
import { PAGE_LIMITS, type PageLimits } from './limits.js';
import { STEPS_CUT_ID } from './steps.js';

const WIDTH = 1000;

interface Segment {
  first: number;
  last: number;
  model: number;
  tools: number;
  failed: boolean;
}

/** Steps in at most `barSegments` segments: neighbours share one when there are more steps than that. */
function segments(t: Trajectory, max: number): Segment[] {
  const per = Math.max(1, Math.ceil(t.steps.length / max));
  const out: Segment[] = [];
  for (let i = 0; i < t.steps.length; i += per) {
    const s: Segment = { first: i + 1, last: Math.min(t.steps.length, i + per), model: 0, tools: 0, failed: false };
    for (let k = i; k < s.last; k++) {
      const f = stepFacts(t, k);
      s.model += f.generate_ms;
      s.tools += f.tools_ms;
      s.failed ||= f.observations.some((o) => o.is_error);
    }
    out.push(s);
  }
  return out;
}

/**
 * The round at a glance: one segment per step (or per run of neighbouring steps, past `barSegments`), as wide as its
 * wall time (model, then tools), red where a tool failed; each links to its first step's anchor, which the timeline
 * always has up to `stepsShown` (rendered or stubbed), and to the note that counts the rest after that. SVG
 * attributes, not inline styles, so the strict CSP holds.
 */
export function renderTimelineBar(t: Trajectory, limits: PageLimits = PAGE_LIMITS): string {
  const spans = segments(t, limits.barSegments);
  const total = spans.reduce((n, s) => n + s.model + s.tools, 0);
  if (spans.length === 0) return '';
  // Upstream files carry no timing: equal segments then.
  const scale = total > 0 ? WIDTH / total : 0;
  let x = 0;
  const parts = spans.map((s) => {
    const w = scale ? (s.model + s.tools) * scale : WIDTH / spans.length;
    const modelW = scale ? s.model * scale : w;
    const name = s.first === s.last ? `Step ${s.first}` : `Steps ${s.first}–${s.last}`;
    const href = s.first <= limits.stepsShown ? `#step-${s.first}` : `#${STEPS_CUT_ID}`;
    const seg = [
      `<a href="${href}"><title>${name} · model ${formatDuration(s.model)} · tools ${formatDuration(s.tools)}</title>`,
      `<rect class="seg-model" x="${x.toFixed(2)}" y="0" width="${Math.max(modelW, 0.5).toFixed(2)}" height="20"/>`,
      w > modelW
        ? `<rect class="${s.failed ? 'seg-failed' : 'seg-tools'}" x="${(x + modelW).toFixed(2)}" y="0" width="${(w - modelW).toFixed(2)}" height="20"/>`
        : '',
      `<rect class="seg-gap" x="${(x + w - 0.3).toFixed(2)}" y="0" width="0.3" height="20"/></a>`,
    ].join('');
    x += w;
    return seg;
  });
  return [
    `<figure class="bar"><svg viewBox="0 0 ${WIDTH} 20" preserveAspectRatio="none" role="img" aria-label="Time per step">${parts.join('')}</svg>`,
    '<figcaption><span class="key seg-model"></span> model <span class="key seg-tools"></span> tools ',
    `<span class="key seg-failed"></span> a tool failed · ${formatDuration(total)} over ${formatCount(t.steps.length)} steps</figcaption></figure>`,
  ].join('');
}
