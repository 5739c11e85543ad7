import {
  callArguments,
  describeExit,
  stepFacts,
  type StepFacts,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryToolCall,
} from '../leaf/trajectory.js';
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
  const { task, model } = t.frognano;
  const where = task.repo ? ` (${task.repo}${task.issueNumber ? `#${task.issueNumber}` : ''})` : '';
  out.push(`Task: ${task.title}${where}`);
  out.push(
    `Run ${t.trajectory_id} · ${t.instance_id} · ${model.backend}/${model.model} · seed ${t.seed} · started ${t.frognano.started_at || 'unknown'} · ` +
      `${t.n_steps} turn${t.n_steps === 1 ? '' : 's'} · ${formatDuration(t.elapsed_sec * 1000)}`,
  );
  t.steps.forEach((step, i) => out.push('', ...renderStep(step, stepFacts(t, i), max)));
  out.push('');
  out.push(`Exit: ${t.exit_reason} — ${describeExit(t)}`);
  if (t.error) out.push(`Error: ${t.error}`);
  if (t.final_message.trim()) out.push(`Final message:`, indent(trimMiddle(t.final_message.trim(), max), '  '));
  out.push(
    `Tokens: ${formatTokens(t.context_tokens)} in context at the end, ${formatTokens(t.frognano.total_completion_tokens)} generated`,
  );
  out.push(
    t.output_patch.trim() ? 'Patch:' : 'Patch: none',
    ...(t.output_patch.trim() ? renderDiffStat(diffStat(t.output_patch)) : []),
  );
  return `${out.join('\n')}\n`;
}

function renderStep(s: TrajectoryStep, f: StepFacts, max: number): string[] {
  const lines = [
    `── Turn ${s.step + 1} · prompt ${formatTokens(f.prompt_tokens)}, generated ${formatTokens(f.completion_tokens)} tokens · ` +
      `model ${formatDuration(f.generate_ms)}, tools ${formatDuration(f.tools_ms)} · ${f.finish_reason}`,
  ];
  if (s.assistant.reasoning_content?.trim()) lines.push(`  thinking: ${oneLine(s.assistant.reasoning_content, 300)}`);
  if (s.assistant.content?.trim()) lines.push(indent(trimMiddle(s.assistant.content.trim(), max), '  '));
  // Observations follow the calls in order (upstream records them so, without ids).
  const calls = s.assistant.tool_calls ?? [];
  calls.forEach((call, i) => {
    lines.push(...renderCall(call, max));
    const o = s.observations[i];
    const extra = f.observations[i];
    if (o) {
      lines.push(`    ${extra?.is_error ? '✗' : '✓'}${extra ? ` ${formatDuration(extra.elapsed_ms)}` : ''}`);
      lines.push(indent(trimMiddle(o.observation, max), '    │ '));
    } else lines.push('    (no observation recorded)');
  });
  for (const e of f.parse_errors) lines.push(`  ✗ malformed tool call: ${oneLine(e, 500)}`);
  return lines;
}

/** `→ Read(file_path="src/a.ts", limit=50)`; multi-line or long values follow as indented blocks. */
function renderCall(call: TrajectoryToolCall, max: number): string[] {
  const inline: string[] = [];
  const blocks: string[] = [];
  for (const [key, value] of Object.entries(callArguments(call))) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (typeof value === 'string' && (value.includes('\n') || value.length > 100)) {
      inline.push(`${key}=<${value.split('\n').length} lines>`);
      blocks.push(`    ${key}:`, indent(trimMiddle(value, max), '    ┆ '));
    } else inline.push(`${key}=${typeof value === 'string' ? JSON.stringify(text) : text}`);
  }
  return [`  → ${call.function.name}(${inline.join(', ')})`, ...blocks];
}
