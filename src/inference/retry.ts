/**
 * Retry policy for calls to a model server: exponential backoff with jitter, honouring Retry-After, bounded
 * in total. Kept apart from the HTTP client so the timing rules can be read (and tested) on their own.
 *
 * The defaults outlast a model-server restart (vLLM loading a 4B model and capturing CUDA graphs takes one
 * to three minutes): twelve retries wait 2, 4, 8, 16, then 30 s steps with equal jitter, i.e. at least 135 s
 * and at most 270 s in all, and no retry starts once 300 s have passed since the first failure.
 */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First backoff step; doubles each retry. */
  baseDelayMs: number;
  /** Cap on one computed backoff step. */
  maxDelayMs: number;
  /** Longest Retry-After we wait for; a server asking for more makes the call fail now. */
  maxRetryAfterMs: number;
  /** No retry starts later than this after the first failure: the bound on a call's total retrying. */
  maxRetryWindowMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 12,
  baseDelayMs: 2_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
  maxRetryWindowMs: 300_000,
};

/** What a caller is told before each retry's wait (the CLI prints it, the runner logs it). */
export interface RetryInfo {
  /** 1-based number of this retry. */
  retry: number;
  maxRetries: number;
  delayMs: number;
  /** Why the last attempt failed, safe to show (no keys, no credentials). */
  reason: string;
  /** Since the first attempt started. */
  elapsedMs: number;
}

/** One line for a log or progress display: "model server: <reason>. Retry 2/10 in 4.0 s (12 s so far)". */
export function describeRetry(info: RetryInfo): string {
  const s = formatSeconds;
  return `model server: ${info.reason} Retry ${info.retry}/${info.maxRetries} in ${s(info.delayMs)} (${s(info.elapsedMs)} so far)`;
}

/** A duration for messages: tenths below 10 s, whole seconds above. */
export function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/**
 * 408, 409 (llama.cpp: slot busy), 425, 429 and 5xx are worth another try; other 4xx are not, nor 501 (llama.cpp:
 * a feature the server was started without) and 505, which answer the same way every time.
 */
export function isRetryableStatus(status: number): boolean {
  if (status === 501 || status === 505) return false;
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/** Delay before retry number `retry` (0-based): "equal jitter", half fixed and half random. */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(step / 2 + (random() * step) / 2);
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date. undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** setTimeout as a promise that rejects with the signal's reason as soon as the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
