import type { FinishReason, ToolSpec } from '../inference/types.js';
import { redact } from '../util/redact.js';

/**
 * A run as one JSON document in upstream Leaf's trajectory format (microsoft/FrogNano,
 * frognano/harness/leaf/agent.py: `trajectory_format: leaf-function-calling`, OpenAI-shaped messages), so
 * upstream's tooling reads this project's trajectories and the other way round. What this project records beyond
 * upstream's fields lives under the one key `frognano`.
 */

/** Upstream's exit reasons, with the same names. */
export type ExitReason =
  | 'agent' // the model answered without a (parseable) tool call
  | 'max_turns'
  | 'max_context_len' // the context reached the budget, or the server refused it as too long
  | 'max_tokens_per_turn' // a turn hit the generation cap before finishing
  | 'max_time' // the run's time budget
  | 'cancelled'
  | 'llm_query_error' // the model backend failed
  | 'tool_error'; // the tool harness failed (sandbox broken, or a timeout upstream's harness cannot read)

export const EXIT_REASON_TEXT: Record<ExitReason, string> = {
  agent: 'the model finished',
  max_turns: 'the turn limit was reached',
  max_context_len: 'the context budget was used up',
  max_tokens_per_turn: 'a turn hit the per-turn token limit',
  max_time: 'the time limit was reached',
  cancelled: 'the run was cancelled',
  llm_query_error: 'the model backend failed',
  tool_error: 'the tool harness failed',
};

/** OpenAI chat shape, as upstream stores it: arguments are the JSON text the model wrote. */
export interface TrajectoryToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: TrajectoryToolCall[];
  reasoning_content?: string;
}

export type TrajectoryMessage =
  | { role: 'system' | 'user'; content: string }
  | AssistantMessage
  | { role: 'tool'; tool_call_id: string; content: string };

export interface TrajectoryStep {
  /** 0-based, as upstream. */
  step: number;
  assistant: AssistantMessage;
  observations: { tool: string; observation: string }[];
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

/** What a section of the bot's additions is; the first user message orders them by it (TASK_SECTION_ORDER). */
export const TASK_SECTION_KINDS = ['guidance', 'discussion', 'instructions', 'feedback', 'ci'] as const;
export type TaskSectionKind = (typeof TASK_SECTION_KINDS)[number];

export interface TaskSection {
  heading: string;
  text: string;
  kind?: TaskSectionKind;
}

/** Per step, what upstream does not record; `steps[i]` here belongs to the trajectory's `steps[i]`. */
export interface StepFacts {
  finish_reason: FinishReason;
  prompt_tokens: number;
  completion_tokens: number;
  generate_ms: number;
  tools_ms: number;
  /** Tool-call markup in this turn that did not parse (upstream leaves it as plain text, and so does the loop). */
  parse_errors: string[];
  /** One per observation, same order. */
  observations: { tool_call_id: string; is_error: boolean; elapsed_ms: number }[];
}

export interface FrognanoFacts {
  task: LeafTask;
  model: { backend: string; model: string };
  sampling: Record<string, number | boolean | undefined>;
  started_at: string;
  total_completion_tokens: number;
  /** The context budget the run was held to: min(configured, the model's window when known). */
  context_budget: number;
  steps: StepFacts[];
  /**
   * The test commands run in the model's workspace after it finished (solve()'s testResults), so the files and
   * `frognano view` show them; absent in files from before they were kept, and when no test command ran.
   */
  test_results?: TestResultFacts[];
}

export interface TestResultFacts {
  command: string;
  /** null when the command was killed (timeout, cancel). */
  exit_code: number | null;
  timed_out: boolean;
  /** The end of its output, secrets scrubbed. */
  output_tail: string;
  duration_ms: number;
}

export interface Trajectory {
  trajectory_format: 'leaf-function-calling';
  trajectory_id: string;
  instance_id: string;
  seed: number;
  messages: TrajectoryMessage[];
  tools: ToolSpec[];
  steps: TrajectoryStep[];
  /** Model calls made (a failed one included), as upstream counts. */
  n_steps: number;
  exit_reason: ExitReason;
  error: string | null;
  final_message: string;
  /** Tokens in context at the end, upstream's accounting. */
  context_tokens: number;
  elapsed_sec: number;
  output_patch: string;
  partial: boolean;
  frognano: FrognanoFacts;
}

/** Step facts for step i; files from upstream (no `frognano` key) read as empty. */
export function stepFacts(t: Pick<Trajectory, 'frognano'>, i: number): StepFacts {
  return (
    t.frognano?.steps?.[i] ?? {
      finish_reason: 'stop',
      prompt_tokens: 0,
      completion_tokens: 0,
      generate_ms: 0,
      tools_ms: 0,
      parse_errors: [],
      observations: [],
    }
  );
}

/** A tool call's arguments as an object ({} when the model's JSON does not parse, as upstream runs it). */
export function callArguments(call: TrajectoryToolCall): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(call.function.arguments || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * What ended the run, in words a maintainer can act on. Upstream calls a last turn without a parseable tool
 * call `agent`; when that turn held tool-call markup that did not parse, saying "the model finished" would be
 * false, so this says what happened.
 */
export function describeExit(t: Pick<Trajectory, 'exit_reason' | 'steps' | 'frognano'>): string {
  if (t.exit_reason === 'agent' && endedInMalformedCalls(t)) {
    const facts = t.steps.map((_, i) => stepFacts(t, i));
    const every =
      facts.length > 0 &&
      facts.every((f) => f.parse_errors.length > 0) &&
      t.steps.every((s) => !s.assistant.tool_calls?.length);
    return every
      ? "every turn ended in malformed tool-call markup: check the model server's tool parser"
      : "the model's last turn held tool-call markup that did not parse, so the run ended there: check the model server's tool parser";
  }
  return EXIT_REASON_TEXT[t.exit_reason] ?? t.exit_reason;
}

/** The run stopped because its last turn's tool calls did not parse (not because the model was done). */
export function endedInMalformedCalls(t: Pick<Trajectory, 'exit_reason' | 'steps' | 'frognano'>): boolean {
  if (t.exit_reason !== 'agent' || t.steps.length === 0) return false;
  return stepFacts(t, t.steps.length - 1).parse_errors.length > 0;
}

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
