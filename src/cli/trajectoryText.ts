import type { ToolCall } from '../inference/types.js';
import { EXIT_REASON_TEXT, type Trajectory, type TrajectoryStep } from '../leaf/trajectory.js';
import { diffStat, renderDiffStat } from './diffStat.js';
import { formatDuration, formatTokens, indent, oneLine, trimMiddle } from './format.js';

export interface TextOptions {
  /** Characters kept of each observation / long argument (head and tail); Infinity keeps everything. */
  maxBlockChars?: number;
}

const DEFAULT_BLOCK = 1200;

/** A trajectory for reading in a terminal: turn by turn, tool calls with arguments, trimmed observations. */
export function renderTrajectoryText(t: Trajectory, opts: TextOptions = {}): string {
  const max = opts.maxBlockChars ?? DEFAULT_BLOCK;
  const out: string[] = [];
  const where = t.task.repo ? ` (${t.task.repo}${t.task.issueNumber ? `#${t.task.issueNumber}` : ''})` : '';
  out.push(`Task: ${t.task.title}${where}`);
  out.push(
    `Run ${t.trajectory_id} · ${t.model.backend}/${t.model.model} · started ${t.started_at} · ` +
      `${t.n_steps} turn${t.n_steps === 1 ? '' : 's'} · ${formatDuration(t.elapsed_sec * 1000)}`,
  );
  for (const step of t.steps) out.push('', ...renderStep(step, max));
  out.push('');
  out.push(`Exit: ${t.exit_reason} — ${EXIT_REASON_TEXT[t.exit_reason] ?? 'unknown reason'}`);
  if (t.error) out.push(`Error: ${t.error}`);
  if (t.final_message.trim()) out.push(`Final message:`, indent(trimMiddle(t.final_message.trim(), max), '  '));
  out.push(`Tokens: ${formatTokens(t.context_tokens)} in context at the end, ${formatTokens(t.total_completion_tokens)} generated`);
  out.push(t.output_patch.trim() ? 'Patch:' : 'Patch: none', ...(t.output_patch.trim() ? renderDiffStat(diffStat(t.output_patch)) : []));
  return `${out.join('\n')}\n`;
}

function renderStep(s: TrajectoryStep, max: number): string[] {
  const lines = [
    `── Turn ${s.step + 1} · prompt ${formatTokens(s.prompt_tokens)}, generated ${formatTokens(s.completion_tokens)} tokens · ` +
      `model ${formatDuration(s.generate_ms)}, tools ${formatDuration(s.tools_ms)} · ${s.finish_reason}`,
  ];
  if (s.assistant.reasoning?.trim()) lines.push(`  thinking: ${oneLine(s.assistant.reasoning, 300)}`);
  if (s.assistant.content.trim()) lines.push(indent(trimMiddle(s.assistant.content.trim(), max), '  '));
  const byId = new Map(s.observations.map((o) => [o.tool_call_id, o]));
  for (const call of s.assistant.tool_calls ?? []) {
    lines.push(...renderCall(call, max));
    const o = byId.get(call.id);
    if (o) {
      byId.delete(call.id);
      lines.push(`    ${o.is_error ? '✗' : '✓'} ${formatDuration(o.elapsed_ms)}`);
      lines.push(indent(trimMiddle(o.observation, max), '    │ '));
    } else lines.push('    (no observation recorded)');
  }
  // Observations for calls not in the message (e.g. written by an older harness) are still shown.
  for (const o of byId.values()) lines.push(`  ${o.tool} [${o.tool_call_id}] ${o.is_error ? '✗' : '✓'}`, indent(trimMiddle(o.observation, max), '    │ '));
  for (const e of s.parse_errors) lines.push(`  ✗ malformed tool call: ${oneLine(e, 500)}`);
  return lines;
}

/** `→ Read(file_path="src/a.ts", limit=50)`; multi-line or long values follow as indented blocks. */
function renderCall(call: ToolCall, max: number): string[] {
  const inline: string[] = [];
  const blocks: string[] = [];
  for (const [key, value] of Object.entries(call.arguments)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (typeof value === 'string' && (value.includes('\n') || value.length > 100)) {
      inline.push(`${key}=<${value.split('\n').length} lines>`);
      blocks.push(`    ${key}:`, indent(trimMiddle(value, max), '    ┆ '));
    } else inline.push(`${key}=${typeof value === 'string' ? JSON.stringify(text) : text}`);
  }
  return [`  → ${call.name}(${inline.join(', ')})`, ...blocks];
}
