/**
 * The retry loop around chat-completion attempts, and the classification of each failure: retried with backoff
 * (429, 5xx, network errors, stalls), given up on (4xx, deterministic 500s, a too-long Retry-After, output already
 * streamed), or a full context (ContextOverflowError). Every error that leaves is a ModelError safe to log.
 */
import { backoffDelayMs, formatSeconds, isRetryableStatus, type RetryInfo, type RetryPolicy } from '../retry.js';
import { ContextOverflowError, ModelError } from '../types.js';
import { StreamBrokenError } from './answer.js';
import {
  contextOverflowFacts,
  errorBody,
  isAutoToolChoiceRejection,
  isDeterministicServerError,
  networkCause,
  sentence,
} from './serverErrors.js';
import { HttpStatusError, StalledError, type ServerTransport } from './transport.js';

/** What the loop needs from the backend; the same for every call. */
export interface RetryContext {
  transport: ServerTransport;
  policy: RetryPolicy;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  /** Told about each retry before its wait (the backend's listener). */
  onRetry?: (info: RetryInfo) => void;
  /** The server named its context length in an overflow error. */
  onContextLength: (n: number | undefined) => void;
  /**
   * vLLM refused tool_choice "auto": the backend switches to "none" and says true, so the next attempt goes out at
   * once, uncounted; false when it had already switched (then the refusal is an ordinary 400).
   */
  refuseAutoToolChoice: () => boolean;
}

/** One call's attempts. */
export interface RetryCall<T> {
  signal?: AbortSignal;
  attempt: (signal: AbortSignal) => Promise<T>;
  /** Whether part of the answer already reached the caller: then nothing is retried. */
  deliveredOutput: () => boolean;
  /** Told about each retry of this call, after the backend's listener. */
  onRetry?: (info: RetryInfo) => void;
}

/** What to do after a failed attempt. */
type Verdict = { kind: 'fail'; error: Error } | { kind: 'again' } | { kind: 'retry'; reason: string; waitMs?: number };

/**
 * Runs attempts until one succeeds, retrying inside the policy's bounds and telling onRetry before each wait.
 */
export async function withRetries<T>(ctx: RetryContext, call: RetryCall<T>): Promise<T> {
  const { transport, policy } = ctx;
  const started = performance.now();
  const state: FailureState = { previous500: undefined };
  for (let retry = 0; ; retry++) {
    const timeout = AbortSignal.timeout(transport.timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    let verdict: Verdict;
    try {
      return await call.attempt(signal);
    } catch (e) {
      if (call.signal?.aborted) throw new ModelError('Generation was cancelled.');
      if (timeout.aborted && !(e instanceof ModelError)) {
        const limit = formatSeconds(transport.timeoutMs);
        throw new ModelError(`${transport.displayUrl} did not finish answering within ${limit}.`, true);
      }
      verdict = classify(e, ctx, state);
    }
    if (verdict.kind === 'fail') throw verdict.error;
    if (verdict.kind === 'again') {
      retry--;
      continue;
    }
    if (call.deliveredOutput())
      throw transport.error(`${verdict.reason} (after part of the answer was streamed)`, true);
    const elapsedMs = performance.now() - started;
    if (retry >= policy.maxRetries || elapsedMs >= policy.maxRetryWindowMs) {
      throw transport.error(
        `${verdict.reason} (gave up after ${retry + 1} attempts in ${formatSeconds(elapsedMs)})`,
        true,
      );
    }
    const delayMs = verdict.waitMs ?? backoffDelayMs(retry, policy, ctx.random);
    const reason = transport.clean(verdict.reason);
    const info: RetryInfo = { retry: retry + 1, maxRetries: policy.maxRetries, delayMs, reason, elapsedMs };
    ctx.onRetry?.(info);
    call.onRetry?.(info);
    try {
      await ctx.sleep(delayMs, call.signal);
    } catch {
      throw new ModelError('Generation was cancelled.');
    }
  }
}

/** What one call remembers between its attempts. */
interface FailureState {
  /** The last attempt's 500 message: the same one twice is not retried further. */
  previous500: string | undefined;
}

function classify(e: unknown, ctx: RetryContext, state: FailureState): Verdict {
  const { transport } = ctx;
  if (e instanceof ModelError) return { kind: 'fail', error: e };
  if (e instanceof StreamBrokenError) return { kind: 'fail', error: transport.error(e.message, true) };
  if (e instanceof HttpStatusError) return classifyStatus(e, ctx, state);
  if (e instanceof StalledError) return { kind: 'retry', reason: e.message };
  return { kind: 'retry', reason: sentence(`cannot reach ${transport.displayUrl}: ${networkCause(e)}`) };
}

function classifyStatus(e: HttpStatusError, ctx: RetryContext, state: FailureState): Verdict {
  const { transport } = ctx;
  const body = errorBody(e.body);
  const overflow = contextOverflowFacts(body);
  if (overflow) {
    ctx.onContextLength(overflow.contextLength);
    const error = new ContextOverflowError(transport.clean(e.message), overflow.promptTokens, overflow.contextLength);
    return { kind: 'fail', error };
  }
  // Fall back to raw markup at once, without counting a retry: with tool_choice "none" vLLM still renders the
  // tools into the prompt and returns the model's <tool_call> markup as content, which we parse.
  if (e.status === 400 && isAutoToolChoiceRejection(body) && ctx.refuseAutoToolChoice()) return { kind: 'again' };
  if (!isRetryableStatus(e.status)) return { kind: 'fail', error: transport.error(e.message, false) };
  const repeated = state.previous500 === e.message;
  if (e.status === 500 && (isDeterministicServerError(body) || repeated)) {
    const why = repeated
      ? ' (the same error twice: not retried further)'
      : ' (a rejection of the request: not retried)';
    return { kind: 'fail', error: transport.error(`${e.message}${why}`, false) };
  }
  state.previous500 = e.status === 500 ? e.message : undefined;
  if (e.retryAfterMs !== undefined && e.retryAfterMs > ctx.policy.maxRetryAfterMs) {
    const wait = Math.round(e.retryAfterMs / 1000);
    return { kind: 'fail', error: transport.error(`${e.message} (the server asks to wait ${wait} s)`, true) };
  }
  return { kind: 'retry', reason: e.message, waitMs: e.retryAfterMs };
}
