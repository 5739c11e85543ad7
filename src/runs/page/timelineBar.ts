import { stepFacts, type Trajectory } from '../../leaf/trajectory.js';
import { formatDuration } from './html.js';

const WIDTH = 1000;

/**
 * The round at a glance: one segment per step, as wide as its wall time (model, then tools), red where a tool
 * failed; each links to its step. SVG attributes, not inline styles, so the strict CSP holds.
 */
export function renderTimelineBar(t: Trajectory): string {
  const spans = t.steps.map((_, i) => {
    const f = stepFacts(t, i);
    return { model: f.generate_ms, tools: f.tools_ms, failed: f.observations.some((o) => o.is_error) };
  });
  const total = spans.reduce((n, s) => n + s.model + s.tools, 0);
  if (spans.length === 0) return '';
  // Upstream files carry no timing: equal segments then.
  const scale = total > 0 ? WIDTH / total : 0;
  let x = 0;
  const parts = spans.map((s, i) => {
    const w = scale ? (s.model + s.tools) * scale : WIDTH / spans.length;
    const modelW = scale ? s.model * scale : w;
    const seg = [
      `<a href="#step-${i + 1}"><title>Step ${i + 1} · model ${formatDuration(s.model)} · tools ${formatDuration(s.tools)}</title>`,
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
    `<span class="key seg-failed"></span> a tool failed · ${formatDuration(total)} over ${spans.length} steps</figcaption></figure>`,
  ].join('');
}
