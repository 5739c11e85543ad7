import { callArguments, stepFacts, type Trajectory, type TrajectoryToolCall } from '../../leaf/trajectory.js';
import { lineDiff, renderDiffLines } from './diff.js';
import { escapeHtml, foldedPre, formatCount, formatDuration } from './html.js';

/** The timeline: one <li> per model turn, with its text, reasoning, tool calls, their output and timing. */
export function renderTimeline(t: Trajectory): string {
  const items = t.steps.map((step, i) => {
    const facts = stepFacts(t, i);
    const calls = step.assistant.tool_calls ?? [];
    const n = i + 1;
    const timing = [
      `model ${formatDuration(facts.generate_ms)}`,
      ...(calls.length ? [`tools ${formatDuration(facts.tools_ms)}`] : []),
      `${formatCount(facts.prompt_tokens)} in · ${formatCount(facts.completion_tokens)} out tokens`,
    ].join(' · ');
    const parts = [
      `<li class="step" id="step-${n}" tabindex="-1"><div class="step-head"><a class="step-n" href="#step-${n}">Step ${n}</a>`,
      `<span class="tools">${calls.map((c) => `<span class="tool">${escapeHtml(c.function.name)}</span>`).join(' ')}</span>`,
      `<span class="meta">${timing}</span></div>`,
    ];
    if (step.assistant.reasoning_content?.trim()) {
      parts.push(
        `<details class="reasoning"><summary>Reasoning</summary><pre class="prose">${escapeHtml(step.assistant.reasoning_content)}</pre></details>`,
      );
    }
    if (step.assistant.content?.trim())
      parts.push(`<pre class="prose said">${escapeHtml(step.assistant.content)}</pre>`);
    for (const e of facts.parse_errors)
      parts.push(
        `<p class="warn">Tool-call markup that did not parse: <code>${escapeHtml(e.slice(0, 500))}</code></p>`,
      );
    calls.forEach((call, k) => {
      const obs = step.observations[k]?.observation ?? '';
      const of = facts.observations[k];
      parts.push(renderCall(call, obs, of ? { isError: of.is_error, ms: of.elapsed_ms } : undefined));
    });
    parts.push('</li>');
    return parts.join('');
  });
  return `<ol class="timeline" id="timeline">${items.join('\n')}</ol>`;
}

function renderCall(call: TrajectoryToolCall, observation: string, fact?: { isError: boolean; ms: number }): string {
  const args = callArguments(call);
  const name = call.function.name;
  const head = `<div class="call-head"><span class="tool">${escapeHtml(name)}</span> ${callTitle(name, args)}${fact ? `<span class="meta">${formatDuration(fact.ms)}</span>` : ''}</div>`;
  const body = [head, callBody(name, args, call.function.arguments)];
  body.push(
    foldedPre(observation, {
      label: fact?.isError ? 'Error output' : 'Output',
      cls: fact?.isError ? 'out err' : 'out',
    }),
  );
  return `<div class="call${fact?.isError ? ' failed' : ''}">${body.join('')}</div>`;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v);
}

/** The one argument that says what a call did (the command, the path, the pattern). */
function callTitle(name: string, args: Record<string, unknown>): string {
  const main = name === 'Bash' ? args.command : name === 'Glob' ? args.pattern : args.file_path;
  const text = str(main).split('\n')[0] ?? '';
  return main === undefined ? '' : `<code class="arg">${escapeHtml(text.slice(0, 200))}</code>`;
}

function callBody(name: string, args: Record<string, unknown>, raw: string): string {
  if (name === 'Edit' && typeof args.old_string === 'string' && typeof args.new_string === 'string') {
    const all = args.replace_all === true ? '<div class="diff-label">every occurrence replaced</div>' : '';
    return `${all}<pre class="diff">${renderDiffLines(lineDiff(args.old_string, args.new_string))}</pre>`;
  }
  if (name === 'Write' && typeof args.content === 'string') {
    // A file's final newline ends its last line; it is not one more, empty line.
    const lines = args.content
      .replace(/\n$/, '')
      .split('\n')
      .map((text) => ({ op: '+' as const, text }));
    const pre = `<pre class="diff">${renderDiffLines(lines)}</pre>`;
    return lines.length <= 30
      ? pre
      : `<details class="fold"><summary>Written content · ${formatCount(lines.length)} lines</summary>${pre}</details>`;
  }
  if (name === 'Bash' && typeof args.command === 'string') {
    return args.command.includes('\n') ? `<pre class="args">${escapeHtml(args.command)}</pre>` : '';
  }
  const known = new Set(['file_path', 'pattern']);
  const rest = Object.entries(args).filter(([k]) => !known.has(k));
  if (rest.length === 0 && Object.keys(args).length > 0) return '';
  if (Object.keys(args).length === 0)
    return raw.trim() && raw.trim() !== '{}' ? `<pre class="args">${escapeHtml(raw)}</pre>` : '';
  return `<dl class="args">${rest.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(str(v))}</dd>`).join('')}</dl>`;
}
