import { codeFence, elideMiddle } from './text.js';
import { summarizeToolCall } from './toolSummary.js';
import {
  callArguments,
  describeExit,
  redactDeep,
  stepFacts,
  type StepFacts,
  type Trajectory,
  type TrajectoryStep,
} from './trajectoryFormat.js';

/**
 * Renders a trajectory as Markdown for a pull request body or comment (GitHub allows 65,536 chars).
 * Everything the model or a command wrote goes into code blocks, so it cannot @mention people, embed
 * images or inject HTML. Long blocks are elided in the middle; if that is not enough, middle turns are
 * dropped; the result never exceeds maxChars.
 */
export function renderTrajectoryMarkdown(trajectory: Trajectory, maxChars = 60_000): string {
  const t = redactDeep(trajectory);
  // The error and the final answer matter most, but may not crowd out the turns.
  const keyCap = Math.max(200, Math.min(2000, Math.floor(maxChars / 12)));
  const header = renderHeader(t, keyCap);
  const footer = renderFinal(t, keyCap);
  // Try generous block sizes first and shrink until everything fits; 0 = only each turn's summary line.
  for (const cap of [6000, 3000, 1500, 800, 400, 200, 0]) {
    const body = t.steps.map((s, i) => renderStep(s, stepFacts(t, i), cap)).join('\n');
    const doc = join(header, body, footer);
    if (doc.length <= maxChars) return doc;
  }
  // Still too long: keep as many first and last turns as fit (summary lines only).
  const rendered = t.steps.map((s, i) => renderStep(s, stepFacts(t, i), 0));
  const fixed = header.length + footer.length + 100;
  let lo = 0;
  let hi = rendered.length;
  let best = '';
  while (lo <= hi) {
    const keep = Math.floor((lo + hi) / 2);
    const first = rendered.slice(0, Math.ceil(keep / 2));
    const last = rendered.slice(rendered.length - Math.floor(keep / 2));
    const skipped = rendered.length - first.length - last.length;
    const body = [...first, `\n_… ${skipped} turns not shown (see the trajectory JSON) …_\n`, ...last].join('\n');
    if (fixed + body.length <= maxChars) {
      best = body;
      lo = keep + 1;
    } else hi = keep - 1;
  }
  const doc = join(header, best, footer);
  if (doc.length <= maxChars) return doc;
  // Only for absurdly small limits: a hard cut.
  const marker = '\n\n_… cut to fit the size limit …_\n';
  return doc.slice(0, Math.max(0, maxChars - marker.length)) + marker;
}

function join(header: string, body: string, footer: string): string {
  return `${header}\n${body}\n${footer}`;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A fenced block; content over `cap` characters is elided in the middle. */
function fence(content: string, cap: number, lang = 'text'): string {
  return codeFence(elideMiddle(content, cap), lang);
}

function formatDuration(sec: number): string {
  if (sec < 60) return `${sec.toFixed(1)}s`;
  const m = Math.floor(sec / 60);
  const s = Math.round(sec % 60);
  return m < 60 ? `${m}m ${s}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

function renderHeader(t: Trajectory, errorCap: number): string {
  const { task: leafTask, model } = t.frognano;
  const task = leafTask.issueNumber ? `#${leafTask.issueNumber} ${leafTask.title}` : leafTask.title;
  const rows = [
    // A zero-width space after @ keeps the title from notifying people all over again.
    ['Task', escapeHtml(elideMiddle(task.replace(/\s+/g, ' '), 300)).replace(/@/g, '@\u200b')],
    ['Model', `${escapeHtml(model.model)} (${escapeHtml(model.backend)})`],
    ['Result', `\`${t.exit_reason}\`: ${describeExit(t)}`],
    ['Turns', String(t.n_steps)],
    [
      'Tokens',
      `${t.context_tokens.toLocaleString('en-US')} in context, ${t.frognano.total_completion_tokens.toLocaleString('en-US')} generated`,
    ],
    ['Time', formatDuration(t.elapsed_sec)],
  ];
  const table = ['| | |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v.replace(/\|/g, '\\|')} |`)].join('\n');
  const error = t.error ? `\n\n**Error**\n\n${fence(t.error, errorCap)}` : '';
  return `### FrogNano trajectory\n\n${table}${error}\n`;
}

function renderFinal(t: Trajectory, cap: number): string {
  return t.final_message.trim() ? `\n**Final message**\n\n${fence(t.final_message, cap)}\n` : '';
}

function stepSummary(s: TrajectoryStep, f: StepFacts): string {
  const calls = s.assistant.tool_calls ?? [];
  // Arguments go in <code>, where GitHub links no @mentions or #references.
  const parts = calls.slice(0, 3).map((c) => {
    const arg = summarizeToolCall({ name: c.function.name, arguments: callArguments(c) });
    return `${escapeHtml(c.function.name)}${arg ? ` <code>${escapeHtml(elideMiddle(arg, 60))}</code>` : ''}`;
  });
  if (calls.length > 3) parts.push(`+${calls.length - 3} more`);
  if (f.parse_errors.length)
    parts.push(`${f.parse_errors.length} malformed tool call${f.parse_errors.length === 1 ? '' : 's'}`);
  if (!parts.length) parts.push(f.finish_reason === 'length' ? 'cut off at the token limit' : 'answer');
  return `Turn ${s.step + 1}: ${parts.join(' · ')} <sub>(${f.completion_tokens} tokens, ${(f.generate_ms / 1000).toFixed(1)}s)</sub>`;
}

function renderStep(s: TrajectoryStep, f: StepFacts, cap: number): string {
  if (cap === 0)
    return `<details><summary>${stepSummary(s, f)}</summary>\n\n_(details elided to fit; see the trajectory JSON)_\n</details>`;
  const out: string[] = [`<details><summary>${stepSummary(s, f)}</summary>`, ''];
  if (s.assistant.reasoning_content?.trim()) out.push('Reasoning:', '', fence(s.assistant.reasoning_content, cap), '');
  if (s.assistant.content?.trim()) out.push('Assistant:', '', fence(s.assistant.content, cap), '');
  (s.assistant.tool_calls ?? []).forEach((call, i) => {
    out.push(
      `Call \`${call.function.name}\`:`,
      '',
      fence(JSON.stringify(callArguments(call), null, 1), cap, 'json'),
      '',
    );
    const obs = s.observations[i];
    if (obs) out.push(f.observations[i]?.is_error ? 'Error:' : 'Result:', '', fence(obs.observation, cap), '');
  });
  if (f.parse_errors.length) out.push('Malformed tool calls:', '', fence(f.parse_errors.join('\n'), cap), '');
  out.push('</details>');
  return out.join('\n');
}
