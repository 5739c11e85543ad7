/**
 * The one wait of the tests: poll a condition until it holds, and when it never does fail with what was awaited, so
 * a timed-out test says which event did not come instead of a bare jest timeout. Every wait is bounded.
 */

export interface WaitOptions {
  /** Give up after this long (default 30 s, under the projects' 60 s test timeout). */
  timeoutMs?: number;
  /** Poll this often (default 50 ms). */
  everyMs?: number;
}

/**
 * Polls `check` until it returns something truthy, and returns that. A check that throws counts as "not yet" (a
 * server still starting refuses connections); the last error is in the timeout's message.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: WaitOptions | number = {},
): Promise<T> {
  const { timeoutMs = 30_000, everyMs = 50 } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      const why = lastError === undefined ? '' : ` (last error: ${(lastError as Error)?.message ?? String(lastError)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A BullMQ job as the waits below need it. */
interface QueueLike {
  getJob(id: string): Promise<any>;
}

/** Waits until job `jobId` of `queue` is completed or failed, and returns it. */
export async function waitForJob(queue: QueueLike, jobId: string, timeoutMs = 60_000): Promise<any> {
  let state: string | undefined;
  try {
    return await waitFor(
      `job ${jobId} to finish`,
      async () => {
        const job = await queue.getJob(jobId);
        state = await job?.getState();
        return job && (state === 'completed' || state === 'failed') ? job : undefined;
      },
      { timeoutMs, everyMs: 100 },
    );
  } catch (e) {
    throw new Error(`${(e as Error).message} (state ${state})`);
  }
}
