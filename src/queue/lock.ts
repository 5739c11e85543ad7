import type { Redis } from 'ioredis';

const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

/**
 * Runs `fn` while holding a short Redis lock, so two webhook deliveries (or the app and a runner)
 * touching the same issue do not interleave. The lock expires on its own if a holder dies; a waiter
 * that gives up after `ttlMs` proceeds rather than hanging the webhook.
 */
export async function withRedisLock<T>(redis: Redis, key: string, fn: () => Promise<T>, ttlMs = 15_000): Promise<T> {
  const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
  const deadline = Date.now() + ttlMs;
  while ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') {
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    return await fn();
  } finally {
    await redis.eval(RELEASE, 1, key, token);
  }
}

/** How long a handled delivery, comment or review is remembered, so redeliveries do nothing. */
export const HANDLED_TTL_SECONDS = 7 * 24 * 3600;

/** True the first time `key` is claimed within `ttlSeconds`; used to handle each webhook delivery once. */
export async function claimOnce(redis: Redis, key: string, ttlSeconds: number): Promise<boolean> {
  return (await redis.set(key, '1', 'EX', ttlSeconds, 'NX')) === 'OK';
}
