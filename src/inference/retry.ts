/**
 * Retry policy for calls to a model server: exponential backoff with jitter, honouring Retry-After.
 * Kept apart from the HTTP client so the timing rules can be read (and tested) on their own.
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
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 4,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
};

/** 408, 409 (llama.cpp: slot busy), 425, 429 and every 5xx are worth another try; other 4xx are not. */
export function isRetryableStatus(status: number): boolean {
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
