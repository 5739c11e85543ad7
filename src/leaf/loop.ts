import { randomUUID } from 'node:crypto';
import type { ChatMessage, GenerateOptions, GenerateResult, ModelBackend, ToolCall } from '../inference/types.js';
import type { Sandbox } from '../sandbox/types.js';
import { safeListener, type LeafEventListener } from './events.js';
import { resolveLimits, type LeafLimits } from './limits.js';
import { renderTaskMessage, SYSTEM_PROMPT, topLevelEntries } from './prompt.js';
import { estimatePromptTokens, estimateTokens } from './text.js';
import { LEAF_TOOLS, summarizeToolCall, ToolAbortedError, ToolExecutor, ToolInfrastructureError } from './tools.js';
import type { ExitReason, LeafTask, Observation, Trajectory, TrajectoryStep } from './trajectory.js';

export interface RunLeafOptions {
  sandbox: Sandbox;
  backend: ModelBackend;
  task: LeafTask;
  limits?: Partial<LeafLimits>;
  /** Cancels the run (exit reason `cancelled`); running commands are killed. */
  signal?: AbortSignal;
  onEvent?: LeafEventListener;
  /** Sampling settings passed to every generate call (default: the backend's, usually greedy). */
  sampling?: Pick<GenerateOptions, 'temperature' | 'topP' | 'topK' | 'seed'>;
  /** Extra lines appended to the task message, e.g. that a setup command failed. */
  notes?: string[];
}

/**
 * Backends word context overflows differently: OpenAI/vLLM ("maximum context length", "reduce the
 * length", context_length_exceeded), llama.cpp ("exceeds the available context size"). Kept specific so
 * that, say, a gRPC "context deadline exceeded" stays a model error.
 */
function isContextOverflow(err: unknown): boolean {
  const m = (err instanceof Error ? err.message : String(err)).toLowerCase();
  return [
    'context_length_exceeded',
    'maximum context length',
    'reduce the length',
    'exceeds the available context size',
    'exceeds the context window',
    'prompt is too long',
  ].some((phrase) => m.includes(phrase));
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Parse errors go back to the model as a user message, so it can resend the calls correctly. */
export function renderParseErrors(errors: string[], ranOthers: boolean): string {
  return [
    `Your last message contained ${errors.length === 1 ? 'a tool call' : 'tool calls'} that could not be parsed, so ${errors.length === 1 ? 'it was' : 'they were'} not run:`,
    ...errors.map((e) => `- ${e}`),
    ranOthers ? 'The other tool calls were run; their results are above.' : '',
    'Send the tool call again in the correct format.',
  ]
    .filter(Boolean)
    .join('\n');
}

/** Every call gets a non-empty id unique within the run: observations are matched by it. */
function normalizeCalls(calls: ToolCall[] | undefined, turn: number, seen: Set<string>): ToolCall[] {
  return (calls ?? []).map((c, i) => {
    let id = typeof c.id === 'string' && c.id.trim() ? c.id : `call_${turn}_${i}`;
    while (seen.has(id)) id = `${id}_${turn}`;
    seen.add(id);
    return { id, name: String(c.name ?? ''), arguments: c.arguments && typeof c.arguments === 'object' ? c.arguments : {} };
  });
}

/**
 * The Leaf agent loop: the model proposes tool calls, the harness runs them in the sandbox (one after
 * another, in order: they share a filesystem) and returns every observation, until the model answers
 * without a tool call or a limit ends the run. Never throws for model or tool trouble: the returned
 * trajectory says what happened (exit_reason, error).
 */
export async function runLeaf(opts: RunLeafOptions): Promise<Trajectory> {
  const limits = resolveLimits(opts.limits);
  const emit = safeListener(opts.onEvent);
  const { sandbox, backend } = opts;
  const started = Date.now();
  const executor = new ToolExecutor(sandbox);
  const tools = LEAF_TOOLS;

  // One signal for everything running on behalf of this loop: aborted on cancel or at the wall-time limit.
  const inner = new AbortController();
  const onOuterAbort = () => inner.abort('cancelled');
  if (opts.signal?.aborted) inner.abort('cancelled');
  else opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const wallTimer = setTimeout(() => inner.abort('max_time'), limits.wallTimeMs);
  wallTimer.unref?.();
  const abortReason = (): ExitReason => (inner.signal.reason === 'max_time' ? 'max_time' : 'cancelled');
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(new ToolAbortedError());
    if (inner.signal.aborted) fail();
    else inner.signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => undefined);

  // Nothing the loop awaits may outlive a cancel or the wall-time limit.
  const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, aborted]);

  let topLevel: string[] | undefined;
  try {
    const listingTimeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), limits.fileToolTimeoutMs).unref?.());
    topLevel = await guard(Promise.race([topLevelEntries(sandbox), listingTimeout]));
  } catch {
    topLevel = undefined; // orientation only; the model can list files itself
  }
  const messages: ChatMessage[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: renderTaskMessage(opts.task, { workdir: sandbox.workdir, topLevel, notes: opts.notes }) },
  ];
  const steps: TrajectoryStep[] = [];
  const seenIds = new Set<string>();
  let exitReason: ExitReason | undefined;
  let error: string | null = null;
  let finalMessage = '';
  let contextTokens = 0;
  let totalCompletion = 0;
  let last: { promptTokens: number; completionTokens: number; messageCount: number } | undefined;

  const countPrompt = async (): Promise<number> => {
    if (backend.countTokens) {
      try {
        return await backend.countTokens(messages, tools);
      } catch {
        /* fall through to the estimate */
      }
    }
    if (last) {
      return last.promptTokens + last.completionTokens + estimateTokens(JSON.stringify(messages.slice(last.messageCount)));
    }
    return estimatePromptTokens(messages, tools);
  };

  try {
    for (let turn = 0; ; turn++) {
      if (inner.signal.aborted) {
        exitReason = abortReason();
        break;
      }
      if (turn >= limits.maxTurns) {
        exitReason = 'max_turns';
        break;
      }
      let promptTokens: number;
      try {
        promptTokens = await guard(countPrompt());
      } catch {
        exitReason = abortReason(); // only the abort can reject: countPrompt falls back to an estimate
        break;
      }
      if (promptTokens + limits.maxNewTokens > limits.contextTokens) {
        contextTokens = Math.max(contextTokens, promptTokens);
        exitReason = 'max_context_len';
        break;
      }
      emit({ type: 'turn_start', turn: turn + 1, maxTurns: limits.maxTurns, promptTokens });

      let result: GenerateResult;
      const genStarted = Date.now();
      try {
        result = await guard(
          backend.generate(messages, tools, { ...opts.sampling, maxNewTokens: limits.maxNewTokens, signal: inner.signal }),
        );
      } catch (err) {
        if (inner.signal.aborted) exitReason = abortReason();
        else if (isContextOverflow(err)) {
          exitReason = 'max_context_len';
          error = errorText(err);
        } else {
          exitReason = 'llm_query_error';
          error = errorText(err);
        }
        break;
      }
      const generateMs = Date.now() - genStarted;
      if (result.finishReason === 'aborted' || inner.signal.aborted) {
        exitReason = abortReason();
        break;
      }

      const calls = normalizeCalls(result.message.tool_calls, turn, seenIds);
      const assistant: ChatMessage = {
        role: 'assistant',
        content: result.message.content ?? '',
        ...(result.message.reasoning ? { reasoning: result.message.reasoning } : {}),
        ...(calls.length ? { tool_calls: calls } : {}),
      };
      const parseErrors = (result.parseErrors ?? []).filter((e) => typeof e === 'string' && e.trim());
      messages.push(assistant);
      totalCompletion += result.completionTokens;
      contextTokens = result.promptTokens + result.completionTokens;
      last = { promptTokens: result.promptTokens, completionTokens: result.completionTokens, messageCount: messages.length };
      const step: TrajectoryStep = {
        step: turn,
        assistant,
        observations: [],
        parse_errors: parseErrors,
        finish_reason: result.finishReason,
        prompt_tokens: result.promptTokens,
        completion_tokens: result.completionTokens,
        generate_ms: generateMs,
        tools_ms: 0,
      };
      steps.push(step);
      const endTurn = () =>
        emit({
          type: 'turn_end',
          turn: turn + 1,
          maxTurns: limits.maxTurns,
          promptTokens: result.promptTokens,
          completionTokens: result.completionTokens,
          toolCalls: calls.length,
          parseErrors: parseErrors.length,
          finishReason: result.finishReason,
          generateMs,
        });

      if (result.finishReason === 'length') {
        // A cut-off turn may hold half a tool call; running any of it would be a guess.
        finalMessage = assistant.content;
        exitReason =
          result.promptTokens + result.completionTokens >= limits.contextTokens ? 'max_context_len' : 'max_tokens_per_turn';
        endTurn();
        break;
      }
      if (calls.length === 0 && parseErrors.length === 0) {
        finalMessage = assistant.content;
        exitReason = 'agent';
        endTurn();
        break;
      }

      const toolsStarted = Date.now();
      let toolFailure: ExitReason | undefined;
      for (const call of calls) {
        emit({ type: 'tool_start', turn: turn + 1, callId: call.id, name: call.name, summary: summarizeToolCall(call) });
        let obs: Observation;
        try {
          const outcome = await executor.execute(call, inner.signal);
          obs = { tool_call_id: call.id, tool: call.name, observation: outcome.output, is_error: outcome.isError, elapsed_ms: outcome.elapsedMs };
        } catch (err) {
          if (err instanceof ToolAbortedError || inner.signal.aborted) toolFailure = abortReason();
          else {
            toolFailure = 'tool_error';
            error = err instanceof ToolInfrastructureError ? `${call.name}: ${err.message}` : errorText(err);
          }
          break;
        }
        step.observations.push(obs);
        messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: obs.observation });
        emit({ type: 'tool_end', turn: turn + 1, callId: call.id, name: call.name, elapsedMs: obs.elapsed_ms, isError: obs.is_error, outputChars: obs.observation.length });
      }
      step.tools_ms = Date.now() - toolsStarted;
      if (toolFailure) {
        exitReason = toolFailure;
        endTurn();
        break;
      }
      if (parseErrors.length) messages.push({ role: 'user', content: renderParseErrors(parseErrors, calls.length > 0) });
      endTurn();
    }
  } finally {
    clearTimeout(wallTimer);
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }

  const info = backend.info();
  const trajectory: Trajectory = {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: randomUUID(),
    task: opts.task,
    model: { backend: info.backend, model: info.model },
    messages,
    tools,
    steps,
    n_steps: steps.length,
    exit_reason: exitReason ?? 'llm_query_error',
    error,
    final_message: finalMessage,
    context_tokens: contextTokens,
    total_completion_tokens: totalCompletion,
    elapsed_sec: (Date.now() - started) / 1000,
    started_at: new Date(started).toISOString(),
    output_patch: '',
  };
  emit({
    type: 'finished',
    exitReason: trajectory.exit_reason,
    turns: trajectory.n_steps,
    elapsedSec: trajectory.elapsed_sec,
    contextTokens,
    error,
  });
  return trajectory;
}
