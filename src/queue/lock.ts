import type { Redis } from 'ioredis';

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const RENEW =
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";

/** The lock stayed taken for longer than a waiter waits: its holder is alive and still working. */
export class LockBusyError extends Error {
  constructor(
    readonly key: string,
    waitedMs: number,
  ) {
    super(`${key} stayed locked for ${waitedMs} ms; giving up rather than running without it`);
    this.name = 'LockBusyError';
  }
}

/**
 * Runs `fn` while holding a Redis lock, so two webhook deliveries (or the app and a runner) touching the same issue
 * do not interleave. The lock lives `ttlMs` and its holder renews it while `fn` runs, so a slow holder (a GitHub call
 * that takes its time) keeps it, and a holder that dies frees it within `ttlMs`. A waiter never runs without the
 * lock: after `waitMs` it throws LockBusyError (the webhook fails visibly and can be redelivered).
 */
export async function withRedisLock<T>(
  redis: Redis,
  key: string,
  fn: () => Promise<T>,
  ttlMs = 15_000,
  waitMs = 2 * ttlMs,
): Promise<T> {
  const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
  const started = Date.now();
  while ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') {
    if (Date.now() - started > waitMs) throw new LockBusyError(key, Date.now() - started);
    await new Promise((r) => setTimeout(r, 50));
  }
  const renew = setInterval(
    () => {
      redis.eval(RENEW, 1, key, token, String(ttlMs)).catch(() => undefined);
    },
    Math.max(10, Math.floor(ttlMs / 3)),
  );
  renew.unref();
  try {
    return await fn();
  } finally {
    clearInterval(renew);
    await redis.eval(RELEASE, 1, key, token);
  }
}

/** How long a handled delivery, comment or review is remembered, so redeliveries do nothing. */
export const HANDLED_TTL_SECONDS = 7 * 24 * 3600;

/** True the first time `key` is claimed within `ttlSeconds`; used to handle each webhook delivery once. */
export async function claimOnce(redis: Redis, key: string, ttlSeconds: number): Promise<boolean> {
  return (await redis.set(key, '1', 'EX', ttlSeconds, 'NX')) === 'OK';
}
