import { callArguments, stepFacts, type Trajectory, type TrajectoryToolCall } from '../../leaf/trajectory.js';
import { stringifyBounded } from '../../util/boundedJson.js';
import { clipLines, clipNote, clippedPre, headLines, moreLinesText, type LineCaps, type Marks } from './clipText.js';
import { lineDiff, renderDiffLines } from './diff.js';
import { escapeHtml, escapeShown, formatCount, formatDuration } from './html.js';
import { PAGE_LIMITS, type PageLimits } from './limits.js';

export interface TimelineOptions {
  /** The raw JSON of step n (1-based), served on its own route behind the page's permission check. */
  rawStep: (n: number) => string;
  /** The raw JSON of the whole round (for steps past `stepsShown`). */
  rawRound: string;
  /** Bytes the timeline may take (what the page has left once the tail is kept back). */
  budgetBytes: number;
  limits?: PageLimits;
}

/** The id the steps past `stepsShown` share (the timeline bar links there). */
export const STEPS_CUT_ID = 'steps-cut';

const BIDI_STEP =
  '<p class="warn bidi-warn">⚠ This step contains bidirectional or invisible Unicode characters, shown as ⟨U+…⟩: the text may read differently from what was written or run.</p>';

/**
 * The timeline: one <li> per model turn, with its text, reasoning, tool calls, their output and timing. Streamed, one
 * step per piece. Every step up to `stepsShown` keeps its anchor: rendered, or a stub with its raw JSON link when it
 * passes its own cap or the page's.
 */
export function* renderTimeline(t: Trajectory, o: TimelineOptions): Generator<string> {
  const L = o.limits ?? PAGE_LIMITS;
  yield '<ol class="timeline" id="timeline">';
  const shown = Math.min(t.steps.length, L.stepsShown);
  const FULL = 'the page is at its size cap';
  // Room kept for the stubs of the steps after this one (the longest number's stub, each).
  const stubBytes = Buffer.byteLength(stubStep(shown, FULL, o)) + 1;
  let kept = 0;
  let work = 0;
  let full = false;
  for (let i = 0; i < shown; i++) {
    const reserve = (shown - i - 1) * stubBytes;
    let html = '';
    if (!full && work < L.workBytes) {
      html = renderStep(t, i, o, L);
      const bytes = Buffer.byteLength(html);
      work += bytes;
      if (bytes > L.stepBytes)
        html = stubStep(i + 1, `it renders to ${formatCount(bytes / 1024)} KiB, over a step's cap`, o);
      // Once one step does not fit, none after it is tried: the page shows a run of steps, then stubs.
      else if (kept + bytes + reserve > o.budgetBytes) full = true;
    }
    if (full || !html) html = stubStep(i + 1, FULL, o);
    kept += Buffer.byteLength(html) + 1;
    yield `${i > 0 ? '\n' : ''}${html}`;
  }
  if (t.steps.length > shown) {
    const more = t.steps.length - shown;
    yield `\n<li class="step cut" id="${STEPS_CUT_ID}"><div class="step-head"><span class="meta">${formatCount(more)} more steps are not shown · <a href="${o.rawRound}">raw JSON of the round</a></span></div></li>`;
  }
  yield '</ol>';
}

function stubStep(n: number, why: string, o: TimelineOptions): string {
  return `<li class="step cut" id="step-${n}" tabindex="-1"><div class="step-head"><a class="step-n" href="#step-${n}">Step ${n}</a><span class="meta">not shown: ${why} · <a href="${o.rawStep(n)}">raw JSON</a></span></div></li>`;
}

function renderStep(t: Trajectory, i: number, o: TimelineOptions, L: PageLimits): string {
  const step = t.steps[i]!;
  const facts = stepFacts(t, i);
  const allCalls = step.assistant.tool_calls ?? [];
  const calls = allCalls.slice(0, L.callsPerStep);
  const n = i + 1;
  const raw = o.rawStep(n);
  const marks: Marks = { invisible: false };
  const prose: LineCaps = { maxLines: L.proseLines, maxBytes: L.proseBytes, lineChars: L.lineChars };
  const timing = [
    `model ${formatDuration(facts.generate_ms)}`,
    ...(calls.length ? [`tools ${formatDuration(facts.tools_ms)}`] : []),
    `${formatCount(facts.prompt_tokens)} in · ${formatCount(facts.completion_tokens)} out tokens`,
  ].join(' · ');
  const head = [
    `<li class="step" id="step-${n}" tabindex="-1"><div class="step-head"><a class="step-n" href="#step-${n}">Step ${n}</a>`,
    `<span class="tools">${calls.map((c) => `<span class="tool">${escapeShown(c.function.name.slice(0, L.labelChars))}</span>`).join(' ')}</span>`,
    `<span class="meta">${timing}</span></div>`,
  ].join('');
  const parts: string[] = [];
  if (step.assistant.reasoning_content?.trim()) {
    const pre = clippedPre(step.assistant.reasoning_content, {
      label: 'Reasoning',
      cls: 'prose',
      caps: prose,
      rawHref: raw,
      marks,
      fold: false,
    });
    parts.push(`<details class="reasoning"><summary>Reasoning</summary>${pre}</details>`);
  }
  if (step.assistant.content?.trim())
    parts.push(
      clippedPre(step.assistant.content, {
        label: 'Said',
        cls: 'prose said',
        caps: prose,
        rawHref: raw,
        marks,
        fold: false,
      }),
    );
  for (const e of facts.parse_errors.slice(0, L.parseErrorsPerStep))
    parts.push(`<p class="warn">Tool-call markup that did not parse: <code>${escapeShown(e.slice(0, 500))}</code></p>`);
  calls.forEach((call, k) => {
    const obs = step.observations[k]?.observation ?? '';
    const of = facts.observations[k];
    parts.push(renderCall(call, obs, { raw, marks, L }, of ? { isError: of.is_error, ms: of.elapsed_ms } : undefined));
  });
  if (allCalls.length > calls.length)
    parts.push(
      `<p class="warn">${clipNote(`${formatCount(allCalls.length - calls.length)} more tool calls`, raw)}</p>`,
    );
  return `${head}${marks.invisible ? BIDI_STEP : ''}${parts.join('')}</li>`;
}

interface CallContext {
  raw: string;
  marks: Marks;
  L: PageLimits;
}

function renderCall(
  call: TrajectoryToolCall,
  observation: string,
  c: CallContext,
  fact?: { isError: boolean; ms: number },
): string {
  const args = callArguments(call);
  const name = call.function.name.slice(0, c.L.labelChars);
  const head = `<div class="call-head"><span class="tool">${escapeShown(name)}</span> ${callTitle(name, args, c.L)}${fact ? `<span class="meta">${formatDuration(fact.ms)}</span>` : ''}</div>`;
  const out = clippedPre(observation, {
    label: fact?.isError ? 'Error output' : 'Output',
    cls: fact?.isError ? 'out err' : 'out',
    caps: { maxLines: c.L.outputLines, maxBytes: c.L.outputBytes, lineChars: c.L.lineChars },
    rawHref: c.raw,
    marks: c.marks,
  });
  return `<div class="call${fact?.isError ? ' failed' : ''}">${head}${callBody(name, args, call.function.arguments, c)}${out}</div>`;
}

/** An argument as text: a string as it is, anything else as depth- and length-bounded JSON. */
function argText(v: unknown, L: PageLimits, maxChars = L.argumentChars): { text: string; cut: boolean } {
  if (typeof v === 'string') return { text: v, cut: false };
  if (v === undefined) return { text: '', cut: false };
  const j = stringifyBounded(v, { maxDepth: L.jsonDepth, maxChars });
  return { text: j.text, cut: j.truncated || j.depthCut };
}

/** The one argument that says what a call did (the command, the path, the pattern). */
function callTitle(name: string, args: Record<string, unknown>, L: PageLimits): string {
  const main = name === 'Bash' ? args.command : name === 'Glob' ? args.pattern : args.file_path;
  if (main === undefined) return '';
  const text = typeof main === 'string' ? main.slice(0, 200) : argText(main, L, 200).text;
  const first = text.split('\n')[0] ?? '';
  return `<code class="arg">${escapeShown(first.slice(0, 200))}</code>`;
}

function callBody(name: string, args: Record<string, unknown>, raw: string, c: CallContext): string {
  const L = c.L;
  if (name === 'Edit' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
    const all = args.replace_all === true ? '<div class="diff-label">every occurrence replaced</div>' : '';
    const before = headLines(args.old_string, L.editLines);
    const after = headLines(args.new_string, L.editLines);
    const lines = lineDiff(before.head, after.head);
    const d = renderDiffLines(lines, { maxBytes: L.editBytes, lineChars: L.lineChars, marks: c.marks });
    const more = lines.length - d.shown + before.moreLines + after.moreLines;
    const note = more > 0 ? clipNote(moreLinesText(more), c.raw) : '';
    return `${all}<pre class="diff">${d.html}${note}</pre>`;
  }
  if (name === 'Write' && typeof args.content === 'string') {
    // A file's final newline ends its last line; it is not one more, empty line.
    const content = args.content.endsWith('\n') ? args.content.slice(0, -1) : args.content;
    const caps = { maxLines: L.editLines, maxBytes: L.editBytes, lineChars: L.lineChars };
    const w = clipLines(
      content,
      caps,
      (line, cut) => renderDiffLines([{ op: '+', text: line }], { lineChars: line.length + cut }).html,
    );
    if (w.invisible) c.marks.invisible = true;
    const note = w.moreLines > 0 ? clipNote(moreLinesText(w.moreLines), c.raw) : '';
    const pre = `<pre class="diff">${w.html.join('')}${note}</pre>`;
    const total = w.html.length + w.moreLines;
    return total <= 30
      ? pre
      : `<details class="fold"><summary>Written content · ${formatCount(total)} lines</summary>${pre}</details>`;
  }
  const prose: LineCaps = { maxLines: L.proseLines, maxBytes: L.proseBytes, lineChars: L.lineChars };
  if (name === 'Bash' && typeof args.command === 'string') {
    return args.command.includes('\n')
      ? clippedPre(args.command, {
          label: 'Command',
          cls: 'args',
          caps: prose,
          rawHref: c.raw,
          marks: c.marks,
          fold: false,
        })
      : '';
  }
  const keys = Object.keys(args);
  const known = new Set(['file_path', 'pattern']);
  const rest = keys.filter((k) => !known.has(k));
  if (rest.length === 0 && keys.length > 0) return '';
  if (keys.length === 0)
    return raw.trim() && raw.trim() !== '{}'
      ? clippedPre(raw, { label: 'Arguments', cls: 'args', caps: prose, rawHref: c.raw, marks: c.marks, fold: false })
      : '';
  return argumentList(args, rest, c);
}

/** The arguments no other view shows, each as text: bounded in keys, characters and depth. */
function argumentList(args: Record<string, unknown>, keys: string[], c: CallContext): string {
  const L = c.L;
  const items = keys.slice(0, L.argumentKeys).map((k) => {
    const v = argText(args[k], L);
    const clipped = v.text.length > L.argumentChars || v.cut;
    const text = v.text.slice(0, L.argumentChars);
    const html = escapeShown(text);
    if (html.length !== escapeHtml(text).length) c.marks.invisible = true;
    return `<dt>${escapeShown(k.slice(0, L.labelChars))}</dt><dd>${html}${clipped ? clipNote('cut here', c.raw) : ''}</dd>`;
  });
  const more =
    keys.length > L.argumentKeys
      ? `<dt>…</dt><dd>${clipNote(`${formatCount(keys.length - L.argumentKeys)} more arguments`, c.raw)}</dd>`
      : '';
  return `<dl class="args">${items.join('')}${more}</dl>`;
}
