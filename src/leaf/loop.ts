import {
  ContextOverflowError,
  type GenerateResult,
  type ModelBackend,
  type ToolCall,
  type ToolSpec,
} from '../inference/types.js';
import type { Sandbox } from '../sandbox/types.js';
import { errorText } from '../util/errors.js';
import { ToolMessageCounter } from './contextTokens.js';
import { Deadline } from './deadline.js';
import { safeListener, type LeafEventListener } from './events.js';
import { resolveLimits, type LeafLimits } from './limits.js';
import { assistantMessage, isContextOverflow, lengthExitReason, normalizeCalls, toolMessage } from './modelTurn.js';
import { renderTaskMessage, SYSTEM_PROMPT } from './prompt.js';
import { buildTrajectory, RunRecord } from './runRecord.js';
import { RunEnded } from './runEnded.js';
import { resolveSampling, type Sampling } from './sampling.js';
import { summarizeToolCall } from './toolSummary.js';
import { ToolAbortedError, ToolExecutor, ToolInfrastructureError, LEAF_TOOLS } from './tools.js';
import type {
  AssistantMessage,
  LeafTask,
  StepFacts,
  Trajectory,
  TrajectoryMessage,
  TrajectoryStep,
} from './trajectoryFormat.js';

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
 * The Leaf agent loop, as upstream's agent.py runs it: the model proposes tool calls, the harness runs them in
 * the sandbox in order and returns every observation as a `tool` message, until the model answers without a
 * tool call or a limit ends the run. Tool-call markup that does not parse stays plain text (no call, no extra
 * message), as with upstream's server-side parser. Never throws for model or tool trouble: the trajectory says
 * what happened (exit_reason, error).
 */
export async function runLeaf(opts: RunLeafOptions): Promise<Trajectory> {
  return new LeafRun(opts).run();
}

/** One model call and what came of it; its step and facts are filled in as its tool calls run. */
interface Turn {
  /** 1-based, as the events count. */
  number: number;
  result: GenerateResult;
  generateMs: number;
  calls: ToolCall[];
  assistant: AssistantMessage;
  step: TrajectoryStep;
  facts: StepFacts;
}

/**
 * One run, shaped as mini-swe-agent's DefaultAgent: `run()` repeats `step()` until something throws `RunEnded`;
 * `step()` is `executeActions(query())`; `query()` checks every limit first, in this one place.
 */
class LeafRun {
  private readonly limits: LeafLimits;
  private readonly sampling: Required<Sampling>;
  private readonly emit: LeafEventListener;
  private readonly backend: ModelBackend;
  private readonly startedAt: number;
  private readonly info: ReturnType<ModelBackend['info']>;
  /** min(configured context, the model's window when known). */
  private readonly budget: number;
  private readonly executor: ToolExecutor;
  private readonly counter: ToolMessageCounter;
  private readonly deadline: Deadline;
  private readonly tools: ToolSpec[] = LEAF_TOOLS;
  private readonly record = new RunRecord();
  private readonly seenIds = new Set<string>();

  constructor(private readonly opts: RunLeafOptions) {
    this.limits = resolveLimits(opts.limits);
    this.sampling = resolveSampling(opts.sampling);
    this.emit = safeListener(opts.onEvent);
    this.backend = opts.backend;
    this.startedAt = Date.now();
    this.info = this.backend.info();
    const window = this.info.contextLength && this.info.contextLength > 0 ? this.info.contextLength : Infinity;
    this.budget = Math.min(this.limits.contextTokens, window);
    this.executor = new ToolExecutor(opts.sandbox, { runnerEnv: opts.toolEnv });
    this.counter = new ToolMessageCounter(this.backend);
    this.deadline = new Deadline(opts.signal, {
      startedAt: this.startedAt,
      budgetMs: this.limits.wallTimeMs,
      graceMs: this.limits.wallTimeGraceMs,
    });
    const task = renderTaskMessage(opts.task, { notes: opts.notes });
    for (const message of [
      { role: 'system' as const, content: SYSTEM_PROMPT },
      { role: 'user' as const, content: task },
    ]) {
      this.record.record({ stored: message, wire: { ...message } });
    }
  }

  /** The one place that decides to stop: every ending arrives here as a RunEnded. */
  async run(): Promise<Trajectory> {
    let ended: RunEnded;
    try {
      for (;;) await this.step();
    } catch (err) {
      ended = err instanceof RunEnded ? err : this.unexpected(err);
    } finally {
      this.deadline.dispose();
    }
    this.record.error = ended.error;
    const trajectory = buildTrajectory(this.record, ended.exitReason, {
      task: this.opts.task,
      instanceId: this.opts.instanceId,
      sampling: this.sampling,
      tools: this.tools,
      startedAt: this.startedAt,
      model: { backend: this.info.backend, model: this.info.model },
      budget: this.budget,
      configuredContextTokens: this.limits.contextTokens,
    });
    this.emit({
      type: 'finished',
      exitReason: trajectory.exit_reason,
      turns: trajectory.n_steps,
      elapsedSec: trajectory.elapsed_sec,
      contextTokens: this.record.contextTokens,
      error: this.record.error,
    });
    return trajectory;
  }

  private async step(): Promise<void> {
    const [result, generateMs] = await this.query();
    const turn = this.beginTurn(result, generateMs);
    try {
      await this.executeActions(turn);
    } finally {
      // Upstream drops a step whose tool harness failed; keeping the calls that did run tells a reader more.
      this.record.addStep(turn.step, turn.facts);
      this.emitTurnEnd(turn);
    }
  }

  /** Every limit, then one model call. */
  private async query(): Promise<[GenerateResult, number]> {
    this.checkLimits();
    const turn = ++this.record.nSteps;
    this.emit({ type: 'turn_start', turn, maxTurns: this.limits.maxTurns, promptTokens: this.record.contextTokens });
    const started = Date.now();
    let result: GenerateResult;
    try {
      result = await this.deadline.guard(
        this.backend.generate(this.record.wire, this.tools, {
          ...this.sampling,
          maxNewTokens: this.limits.maxNewTokens,
          signal: this.deadline.signal,
          onRetry: (retry) => this.emit({ type: 'model_retry', turn, retry }),
        }),
      );
    } catch (err) {
      throw this.queryFailure(err);
    }
    if (result.finishReason === 'aborted') throw this.deadline.ended();
    this.deadline.throwIfAborted();
    return [result, Date.now() - started];
  }

  /**
   * Upstream's order at a step boundary: the context the last step's observations used up (upstream checks it at
   * the end of that step; nothing happens in between), the turn limit, a cancel or hard stop, the time budget.
   */
  private checkLimits(): void {
    if (this.budget > 0 && this.record.contextTokens >= this.budget) throw new RunEnded('max_context_len');
    if (this.record.nSteps >= this.limits.maxTurns) throw new RunEnded('max_turns');
    this.deadline.check();
  }

  private queryFailure(err: unknown): RunEnded {
    if (this.deadline.signal.aborted) return this.deadline.ended();
    if (!isContextOverflow(err)) return new RunEnded('llm_query_error', errorText(err));
    // A prompt the server refused outright still says how full the context was (not "0 tokens").
    if (err instanceof ContextOverflowError && err.promptTokens) {
      this.record.contextTokens = Math.max(this.record.contextTokens, err.promptTokens);
    }
    return new RunEnded('max_context_len');
  }

  /** Records the model's answer and opens its step. */
  private beginTurn(result: GenerateResult, generateMs: number): Turn {
    const number = this.record.nSteps;
    const calls = normalizeCalls(result.message.tool_calls, number - 1, this.seenIds);
    const assistant = assistantMessage(result, calls);
    this.record.record(assistant);
    this.record.totalCompletion += result.completionTokens;
    this.record.contextTokens = result.promptTokens + result.completionTokens;
    const facts: StepFacts = {
      finish_reason: result.finishReason,
      prompt_tokens: result.promptTokens,
      completion_tokens: result.completionTokens,
      generate_ms: generateMs,
      tools_ms: 0,
      parse_errors: (result.parseErrors ?? []).filter((e) => typeof e === 'string' && e.trim()),
      observations: [],
    };
    const step: TrajectoryStep = { step: number - 1, assistant: assistant.stored, observations: [] };
    return { number, result, generateMs, calls, assistant: assistant.stored, step, facts };
  }

  /** Runs the turn's tool calls in order; a turn without any (or cut off) ends the run. */
  private async executeActions(turn: Turn): Promise<void> {
    const truncated = turn.result.finishReason === 'length';
    if (!turn.calls.length || truncated) {
      // A cut-off turn may hold half a tool call; upstream runs none of it.
      this.record.finalMessage = turn.assistant.content ?? '';
      throw new RunEnded(truncated ? lengthExitReason(turn.result, this.budget, this.limits.maxNewTokens) : 'agent');
    }
    const toolsStarted = Date.now();
    const toolMessages: TrajectoryMessage[] = [];
    for (const call of turn.calls) toolMessages.push(await this.executeAction(turn, call));
    turn.facts.tools_ms = Date.now() - toolsStarted;
    this.record.contextTokens += await this.deadline.guard(this.counter.count(toolMessages)).catch(() => 0);
  }

  private async executeAction(turn: Turn, call: ToolCall): Promise<TrajectoryMessage> {
    const summary = summarizeToolCall(call);
    this.emit({ type: 'tool_start', turn: turn.number, callId: call.id, name: call.name, summary });
    let out;
    try {
      out = await this.deadline.guard(this.executor.execute(call, this.deadline.signal));
    } catch (err) {
      throw this.toolFailure(err);
    }
    const message = toolMessage(call, out.output);
    this.record.record(message);
    turn.step.observations.push({ tool: call.name, observation: out.output });
    turn.facts.observations.push({ tool_call_id: call.id, is_error: out.isError, elapsed_ms: out.elapsedMs });
    this.emit({
      type: 'tool_end',
      turn: turn.number,
      callId: call.id,
      name: call.name,
      elapsedMs: out.elapsedMs,
      isError: out.isError,
      outputChars: out.output.length,
    });
    return message.stored;
  }

  private toolFailure(err: unknown): RunEnded {
    if (err instanceof ToolAbortedError || this.deadline.signal.aborted) return this.deadline.ended();
    return new RunEnded('tool_error', err instanceof ToolInfrastructureError ? err.message : errorText(err));
  }

  /** A throw that is no run ending (a bug): the run still ends with a trajectory, never an exception. */
  private unexpected(err: unknown): RunEnded {
    if (this.deadline.signal.aborted) return this.deadline.ended();
    return new RunEnded('tool_error', errorText(err));
  }

  private emitTurnEnd(turn: Turn): void {
    this.emit({
      type: 'turn_end',
      turn: turn.number,
      maxTurns: this.limits.maxTurns,
      promptTokens: turn.result.promptTokens,
      completionTokens: turn.result.completionTokens,
      toolCalls: turn.calls.length,
      parseErrors: turn.facts.parse_errors.length,
      finishReason: turn.result.finishReason,
      generateMs: turn.generateMs,
    });
  }
}
