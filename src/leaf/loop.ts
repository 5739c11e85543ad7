import { randomUUID } from 'node:crypto';
import { ContextOverflowError, type ChatMessage, type GenerateResult, type ModelBackend, type ToolCall, type ToolSpec } from '../inference/types.js';
import type { Sandbox } from '../sandbox/types.js';
import { safeListener, type LeafEvent, type LeafEventListener } from './events.js';
import { resolveLimits, type LeafLimits } from './limits.js';
import { renderTaskMessage, SYSTEM_PROMPT } from './prompt.js';
import { resolveSampling, type Sampling } from './sampling.js';
import { summarizeToolCall, ToolAbortedError, ToolExecutor, ToolInfrastructureError, LEAF_TOOLS } from './tools.js';
import { pyJsonDumps } from './pyJson.js';
import type {
  AssistantMessage,
  ExitReason,
  LeafTask,
  StepFacts,
  Trajectory,
  TrajectoryMessage,
  TrajectoryStep,
} from './trajectory.js';

export interface RunLeafOptions {
  sandbox: Sandbox;
  backend: ModelBackend;
  task: LeafTask;
  limits?: Partial<LeafLimits>;
  /** Overrides of upstream's eval sampling (LEAF_SAMPLING). */
  sampling?: Partial<Sampling>;
  /** Cancels the run (exit reason `cancelled`); running commands are killed. */
  signal?: AbortSignal;
  onEvent?: LeafEventListener;
  /** Paragraphs for the end of the task message's additions, e.g. that a setup command failed. */
  notes?: string[];
  /** Upstream's instance_id; default: owner__repo-N from the task. */
  instanceId?: string;
  /** Environment of the in-sandbox tool runner (upstream's LEAF_* limits). */
  toolEnv?: Record<string, string>;
}

/**
 * Upstream's words for a server that refused a prompt as too long (agent.py _is_context_overflow), plus
 * llama.cpp's; a backend that recognised it already throws ContextOverflowError.
 */
export function isContextOverflow(err: unknown): boolean {
  if (err instanceof ContextOverflowError) return true;
  const m = (err instanceof Error ? err.message : String(err)).toLowerCase();
  return (
    ['context_length_exceeded', 'reduce the length', 'maximum context length', 'exceeds the available context size'].some((p) => m.includes(p)) ||
    (m.includes('context length') && m.includes('exceed'))
  );
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Every call gets a non-empty id unique within the run: observations are matched by it. */
function normalizeCalls(calls: ToolCall[] | undefined, turn: number, seen: Set<string>): ToolCall[] {
  return (calls ?? []).map((c, i) => {
    let id = typeof c.id === 'string' && c.id.trim() ? c.id : `call_${turn}_${i}`;
    while (seen.has(id)) id = `${id}_${turn}`;
    seen.add(id);
    const args = c.arguments && typeof c.arguments === 'object' && !Array.isArray(c.arguments) ? c.arguments : {};
    return { ...c, id, name: String(c.name ?? ''), arguments: args };
  });
}

/** The assistant turn as upstream stores it (agent.py _message_dict): arguments as JSON text. */
function assistantRecord(result: GenerateResult, calls: ToolCall[]): AssistantMessage {
  const m: AssistantMessage = { role: 'assistant', content: result.message.content ? result.message.content : null };
  if (calls.length) {
    m.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.argumentsText ?? pyJsonDumps(c.arguments) },
    }));
  }
  if (result.message.reasoning) m.reasoning_content = result.message.reasoning;
  return m;
}

/** SWE-bench-style instance id (`owner__repo-12`), or `local`. */
function defaultInstanceId(task: LeafTask): string {
  if (!task.repo) return 'local';
  const name = task.repo.replace('/', '__');
  return task.issueNumber !== undefined ? `${name}-${task.issueNumber}` : name;
}

/**
 * Owns the run's abort signal: a cancel from outside, or the hard stop some time after the time budget (upstream
 * checks its time budget only between steps; a job must still end).
 */
class Deadline {
  readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly onOuter = () => this.controller.abort('cancelled');
  readonly aborted: Promise<never>;

  constructor(private readonly outer: AbortSignal | undefined, hardStopMs: number) {
    if (outer?.aborted) this.controller.abort('cancelled');
    else outer?.addEventListener('abort', this.onOuter, { once: true });
    this.timer = setTimeout(() => this.controller.abort('max_time'), hardStopMs);
    this.timer.unref?.();
    this.aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new ToolAbortedError());
      if (this.signal.aborted) fail();
      else this.signal.addEventListener('abort', fail, { once: true });
    });
    this.aborted.catch(() => undefined);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The exit reason of an abort. */
  reason(): ExitReason {
    return this.signal.reason === 'max_time' ? 'max_time' : 'cancelled';
  }

  /** Nothing the loop awaits may outlive a cancel or the hard stop. */
  guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.aborted]);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onOuter);
  }
}

/**
 * Upstream's accounting of what tool messages add to the context (agent.py _count_message_tokens): the tokens of
 * their compact JSON. Counted with the backend's tokenizer when it has one (a user message holding the JSON, less
 * an empty one), else upstream's last fallback, UTF-8 bytes / 4.
 */
class ToolMessageCounter {
  private baseline: number | undefined;
  constructor(private readonly backend: ModelBackend) {}

  async count(messages: TrajectoryMessage[]): Promise<number> {
    if (!messages.length) return 0;
    const serialized = JSON.stringify(messages);
    if (this.backend.countTokens) {
      try {
        this.baseline ??= await this.backend.countTokens([{ role: 'user', content: '' }], []);
        const n = await this.backend.countTokens([{ role: 'user', content: serialized }], []);
        if (n > this.baseline) return n - this.baseline;
      } catch {
        /* the estimate below */
      }
    }
    return Math.ceil(Buffer.byteLength(serialized, 'utf8') / 4);
  }
}

interface RunState {
  messages: TrajectoryMessage[];
  /** The same conversation in the backends' shape. */
  chat: ChatMessage[];
  steps: TrajectoryStep[];
  facts: StepFacts[];
  nSteps: number;
  contextTokens: number;
  totalCompletion: number;
  finalMessage: string;
  error: string | null;
}

/**
 * The Leaf agent loop, as upstream's agent.py runs it: the model proposes tool calls, the harness runs them in
 * the sandbox in order and returns every observation as a `tool` message, until the model answers without a
 * tool call or a limit ends the run. Tool-call markup that does not parse stays plain text (no call, no extra
 * message), as with upstream's server-side parser. Never throws for model or tool trouble: the trajectory says
 * what happened (exit_reason, error).
 */
export async function runLeaf(opts: RunLeafOptions): Promise<Trajectory> {
  const limits = resolveLimits(opts.limits);
  const sampling = resolveSampling(opts.sampling);
  const emit = safeListener(opts.onEvent);
  const { backend } = opts;
  const started = Date.now();
  const info = backend.info();
  const budget = Math.min(limits.contextTokens, info.contextLength && info.contextLength > 0 ? info.contextLength : Infinity);
  const executor = new ToolExecutor(opts.sandbox, { runnerEnv: opts.toolEnv });
  const counter = new ToolMessageCounter(backend);
  const deadline = new Deadline(opts.signal, limits.wallTimeMs + limits.wallTimeGraceMs);
  const tools: ToolSpec[] = LEAF_TOOLS;
  const task = renderTaskMessage(opts.task, { notes: opts.notes });
  const s: RunState = {
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: task },
    ],
    chat: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: task },
    ],
    steps: [],
    facts: [],
    nSteps: 0,
    contextTokens: 0,
    totalCompletion: 0,
    finalMessage: '',
    error: null,
  };
  const seenIds = new Set<string>();
  let exitReason: ExitReason = 'max_turns';

  try {
    for (let step = 0; step < limits.maxTurns; step++) {
      if (deadline.signal.aborted) {
        exitReason = deadline.reason();
        break;
      }
      if (Date.now() - started >= limits.wallTimeMs) {
        exitReason = 'max_time';
        break;
      }
      s.nSteps++;
      emit({ type: 'turn_start', turn: step + 1, maxTurns: limits.maxTurns, promptTokens: s.contextTokens });
      const genStarted = Date.now();
      let result: GenerateResult;
      try {
        result = await deadline.guard(
          backend.generate(s.chat, tools, {
            ...sampling,
            maxNewTokens: limits.maxNewTokens,
            signal: deadline.signal,
            onRetry: (retry) => emit({ type: 'model_retry', turn: step + 1, retry }),
          }),
        );
      } catch (err) {
        if (deadline.signal.aborted) exitReason = deadline.reason();
        else if (isContextOverflow(err)) {
          exitReason = 'max_context_len';
          // A prompt the server refused outright still says how full the context was (not "0 tokens").
          if (err instanceof ContextOverflowError && err.promptTokens) s.contextTokens = Math.max(s.contextTokens, err.promptTokens);
        }
        else {
          exitReason = 'llm_query_error';
          s.error = errorText(err);
        }
        break;
      }
      if (result.finishReason === 'aborted' || deadline.signal.aborted) {
        exitReason = deadline.reason();
        break;
      }
      const outcome = await runStep(step, result, Date.now() - genStarted);
      if (outcome) {
        exitReason = outcome;
        break;
      }
    }
  } finally {
    deadline.dispose();
  }

  async function runStep(step: number, result: GenerateResult, generateMs: number): Promise<ExitReason | undefined> {
    const calls = normalizeCalls(result.message.tool_calls, step, seenIds);
    const assistant = assistantRecord(result, calls);
    const parseErrors = (result.parseErrors ?? []).filter((e) => typeof e === 'string' && e.trim());
    s.messages.push(assistant);
    s.chat.push({
      role: 'assistant',
      content: result.message.content ?? '',
      ...(result.message.reasoning ? { reasoning: result.message.reasoning } : {}),
      ...(calls.length ? { tool_calls: calls } : {}),
    });
    s.totalCompletion += result.completionTokens;
    s.contextTokens = result.promptTokens + result.completionTokens;
    const facts: StepFacts = {
      finish_reason: result.finishReason,
      prompt_tokens: result.promptTokens,
      completion_tokens: result.completionTokens,
      generate_ms: generateMs,
      tools_ms: 0,
      parse_errors: parseErrors,
      observations: [],
    };
    const endTurn = () =>
      emit({
        type: 'turn_end',
        turn: step + 1,
        maxTurns: limits.maxTurns,
        promptTokens: result.promptTokens,
        completionTokens: result.completionTokens,
        toolCalls: calls.length,
        parseErrors: parseErrors.length,
        finishReason: result.finishReason,
        generateMs,
      });

    const truncated = result.finishReason === 'length';
    if (!calls.length || truncated) {
      // A cut-off turn may hold half a tool call; upstream runs none of it.
      s.finalMessage = assistant.content ?? '';
      s.steps.push({ step, assistant, observations: [] });
      s.facts.push(facts);
      endTurn();
      return truncated ? lengthExitReason(result) : 'agent';
    }

    const toolsStarted = Date.now();
    const observations: TrajectoryStep['observations'] = [];
    const toolMessages: TrajectoryMessage[] = [];
    for (const call of calls) {
      emit({ type: 'tool_start', turn: step + 1, callId: call.id, name: call.name, summary: summarizeToolCall(call) });
      let out;
      try {
        out = await deadline.guard(executor.execute(call, deadline.signal));
      } catch (err) {
        // Upstream drops the step here; keeping the calls that did run tells a reader more.
        s.steps.push({ step, assistant, observations });
        s.facts.push(facts);
        endTurn();
        if (err instanceof ToolAbortedError || deadline.signal.aborted) return deadline.reason();
        s.error = err instanceof ToolInfrastructureError ? err.message : errorText(err);
        return 'tool_error';
      }
      const message: TrajectoryMessage = { role: 'tool', tool_call_id: call.id, content: out.output };
      s.messages.push(message);
      s.chat.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: out.output });
      toolMessages.push(message);
      observations.push({ tool: call.name, observation: out.output });
      facts.observations.push({ tool_call_id: call.id, is_error: out.isError, elapsed_ms: out.elapsedMs });
      emit({ type: 'tool_end', turn: step + 1, callId: call.id, name: call.name, elapsedMs: out.elapsedMs, isError: out.isError, outputChars: out.output.length });
    }
    facts.tools_ms = Date.now() - toolsStarted;
    s.steps.push({ step, assistant, observations });
    s.facts.push(facts);
    s.contextTokens += await deadline.guard(counter.count(toolMessages)).catch(() => 0);
    endTurn();
    if (budget > 0 && s.contextTokens >= budget) return 'max_context_len';
    return undefined;
  }

  /** Upstream's reading of a turn cut off by a length limit (agent.py _length_exit_reason). */
  function lengthExitReason(result: GenerateResult): ExitReason {
    const cap = limits.maxNewTokens ?? 0;
    if (budget > 0 && result.promptTokens + result.completionTokens >= budget) return 'max_context_len';
    if (cap && result.completionTokens >= cap) return 'max_tokens_per_turn';
    return 'max_context_len';
  }

  const trajectory: Trajectory = {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: randomUUID().replace(/-/g, ''),
    instance_id: opts.instanceId ?? defaultInstanceId(opts.task),
    seed: sampling.seed,
    messages: s.messages,
    tools,
    steps: s.steps,
    n_steps: s.nSteps,
    exit_reason: exitReason,
    error: s.error,
    final_message: s.finalMessage,
    context_tokens: s.contextTokens,
    elapsed_sec: (Date.now() - started) / 1000,
    output_patch: '',
    partial: false,
    frognano: {
      task: opts.task,
      model: { backend: info.backend, model: info.model },
      sampling: { ...sampling },
      started_at: new Date(started).toISOString(),
      total_completion_tokens: s.totalCompletion,
      context_budget: Number.isFinite(budget) ? budget : limits.contextTokens,
      steps: s.facts,
    },
  };
  const finished: LeafEvent = {
    type: 'finished',
    exitReason: trajectory.exit_reason,
    turns: trajectory.n_steps,
    elapsedSec: trajectory.elapsed_sec,
    contextTokens: s.contextTokens,
    error: s.error,
  };
  emit(finished);
  return trajectory;
}
