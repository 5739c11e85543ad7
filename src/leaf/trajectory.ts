import { z } from 'zod';
import type { ChatMessage, FinishReason, ToolSpec } from '../inference/types.js';
import { redact } from '../util/redact.js';

/**
 * Why a run ended. The names are those of the FrogNano Leaf harness, so trajectories from this bot
 * and from the model's own evaluation tooling can be compared and replayed with the same code.
 */
export type ExitReason =
  | 'agent' // the model answered without a tool call: it is done
  | 'max_turns'
  | 'max_context_len' // the next turn would not fit in the context window
  | 'max_tokens_per_turn' // a turn hit the generation cap before finishing
  | 'max_time' // wall-clock limit of the run
  | 'cancelled'
  | 'llm_query_error' // the model backend failed
  | 'tool_error'; // the sandbox broke (could not run a command, stopped answering)

export const EXIT_REASON_TEXT: Record<ExitReason, string> = {
  agent: 'the model finished',
  max_turns: 'the turn limit was reached',
  max_context_len: 'the context window was full',
  max_tokens_per_turn: 'a turn hit the per-turn token limit',
  max_time: 'the time limit was reached',
  cancelled: 'the run was cancelled',
  llm_query_error: 'the model backend failed',
  tool_error: 'the sandbox failed',
};

export interface Observation {
  tool_call_id: string;
  tool: string;
  observation: string;
  is_error: boolean;
  elapsed_ms: number;
}

export interface TrajectoryStep {
  /** 0-based, as in the Leaf harness. */
  step: number;
  assistant: ChatMessage;
  observations: Observation[];
  /** Malformed tool calls of this turn, as they were reported back to the model. */
  parse_errors: string[];
  finish_reason: FinishReason;
  prompt_tokens: number;
  completion_tokens: number;
  generate_ms: number;
  tools_ms: number;
}

export interface LeafTask {
  title: string;
  body: string;
  /** owner/name */
  repo?: string;
  issueNumber?: number;
  /**
   * What the bot adds to the issue, in order, each rendered after the issue text under its heading: a
   * maintainer's guidance, the discussion by writers, repository instructions (AGENTS.md), review feedback.
   */
  context?: TaskSection[];
}

export interface TaskSection {
  heading: string;
  text: string;
}

/**
 * One run, as one JSON document (snake_case keys, `trajectory_format: leaf-function-calling`, like the
 * Leaf harness). `messages` is the full conversation in this project's ChatMessage shape.
 */
export interface Trajectory {
  trajectory_format: 'leaf-function-calling';
  trajectory_id: string;
  task: LeafTask;
  model: { backend: string; model: string };
  messages: ChatMessage[];
  tools: ToolSpec[];
  steps: TrajectoryStep[];
  n_steps: number;
  exit_reason: ExitReason;
  error: string | null;
  final_message: string;
  /** Tokens in context after the last turn (prompt + completion). */
  context_tokens: number;
  total_completion_tokens: number;
  elapsed_sec: number;
  started_at: string;
  /** Filled by solve() once the patch is computed; empty until then or when nothing changed. */
  output_patch: string;
}

/**
 * The trajectory JSON as `solve` and the runner write it, checked field by field so a reader (`frognano
 * replay`) can say exactly what is wrong with a damaged or foreign file. Unknown extra keys are accepted
 * (newer writers may add some) and dropped.
 */
const toolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) });

const chatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string(),
  reasoning: z.string().optional(),
  tool_calls: z.array(toolCallSchema).optional(),
  tool_call_id: z.string().optional(),
  name: z.string().optional(),
});

const observationSchema = z.object({
  tool_call_id: z.string(),
  tool: z.string(),
  observation: z.string(),
  is_error: z.boolean(),
  elapsed_ms: z.number().nonnegative(),
});

const stepSchema = z.object({
  step: z.number().int().nonnegative(),
  assistant: chatMessageSchema,
  observations: z.array(observationSchema),
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
    context: z.array(z.object({ heading: z.string(), text: z.string() })).optional(),
  }),
  model: z.object({ backend: z.string(), model: z.string() }),
  messages: z.array(chatMessageSchema),
  tools: z.array(z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) })),
  steps: z.array(stepSchema),
  n_steps: z.number().int().nonnegative(),
  // Every ExitReason, in EXIT_REASON_TEXT's order (the Record type makes that list complete).
  exit_reason: z.enum(Object.keys(EXIT_REASON_TEXT) as [ExitReason, ...ExitReason[]]),
  error: z.string().nullable(),
  final_message: z.string(),
  context_tokens: z.number().nonnegative(),
  total_completion_tokens: z.number().nonnegative(),
  elapsed_sec: z.number().nonnegative(),
  started_at: z.string(),
  output_patch: z.string(),
});

// Compile-time guard: the schema must keep accepting exactly what the Leaf harness writes.
const _writerFits = (t: Trajectory): z.infer<typeof TrajectoryFileSchema> => t;
void _writerFits;

/** Deep copy with every string passed through redact(): safe to store, log or post. */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v);
    return out as T;
  }
  return value;
}

/** The trajectory as stored: secrets scrubbed, pretty-printed. */
export function serializeTrajectory(t: Trajectory): string {
  return `${JSON.stringify(redactDeep(t), null, 2)}\n`;
}

export { renderTrajectoryMarkdown } from './trajectoryMarkdown.js';
