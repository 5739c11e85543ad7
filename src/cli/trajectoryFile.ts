import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { Trajectory } from '../leaf/trajectory.js';
import { setupError } from './exitCodes.js';

/**
 * The trajectory JSON as `solve` and the runner write it (src/leaf/trajectory.ts), checked field by field
 * so `frognano replay` can say exactly what is wrong with a damaged or foreign file. Unknown extra keys
 * are accepted (newer writers may add some) and dropped.
 */
const toolCall = z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) });

const chatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  reasoning: z.string().optional(),
  tool_calls: z.array(toolCall).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});

const observation = z.object({
  tool_call_id: z.string(),
  tool: z.string(),
  observation: z.string(),
  is_error: z.boolean(),
  elapsed_ms: z.number().nonnegative(),
});

const step = z.object({
  step: z.number().int().nonnegative(),
  assistant: chatMessage,
  observations: z.array(observation),
  parse_errors: z.array(z.string()),
  finish_reason: z.enum(['stop', 'tool_calls', 'length', 'aborted']),
  prompt_tokens: z.number().nonnegative(),
  completion_tokens: z.number().nonnegative(),
  generate_ms: z.number().nonnegative(),
  tools_ms: z.number().nonnegative(),
});

export const TrajectoryFileSchema = z.object({
  trajectory_format: z.literal('leaf-function-calling'),
  trajectory_id: z.string(),
  task: z.object({
    title: z.string(),
    body: z.string(),
    repo: z.string().optional(),
    issueNumber: z.number().int().positive().optional(),
  }),
  model: z.object({ backend: z.string(), model: z.string() }),
  messages: z.array(chatMessage),
  tools: z.array(z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })),
  steps: z.array(step),
  n_steps: z.number().int().nonnegative(),
  exit_reason: z.enum([
    'agent', 'max_turns', 'max_context_len', 'max_tokens_per_turn', 'max_time', 'cancelled', 'llm_query_error', 'tool_error',
  ]),
  error: z.string().nullable(),
  final_message: z.string(),
  context_tokens: z.number().nonnegative(),
  total_completion_tokens: z.number().nonnegative(),
  elapsed_sec: z.number().nonnegative(),
  started_at: z.string(),
  output_patch: z.string(),
});

// Compile-time guard: the schema must keep accepting exactly what the Leaf harness writes.
type Parsed = z.infer<typeof TrajectoryFileSchema>;
const _writerFits = (t: Trajectory): Parsed => t;
void _writerFits;

/** "steps[3].observations[0].is_error: expected boolean, received string" — at most `max` issues. */
export function describeIssues(error: z.ZodError, max = 8): string[] {
  const lines = error.issues.slice(0, max).map((i) => `${formatPath(i.path)}: ${i.message}`);
  if (error.issues.length > max) lines.push(`… and ${error.issues.length - max} more problems`);
  return lines;
}

function formatPath(path: PropertyKey[]): string {
  if (path.length === 0) return '(top level)';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

/** Reads and validates a trajectory file; every failure is a setup error naming the file and the problem. */
export async function loadTrajectoryFile(file: string): Promise<Trajectory> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw setupError(`cannot read ${file}${code ? ` (${code})` : ''}`, code === 'EISDIR' ? 'give the trajectory.json file inside the output directory' : 'check the path');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw setupError(`${file} is not valid JSON: ${(err as Error).message}`, 'was the file cut off? trajectories are written as one JSON document');
  }
  const parsed = TrajectoryFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error);
    throw setupError(
      `${file} is not a frognano trajectory:\n${problems.map((p) => `    ${p}`).join('\n')}`,
      'replay reads the trajectory.json written by `frognano solve` or by the runner',
    );
  }
  return parsed.data as unknown as Trajectory;
}
