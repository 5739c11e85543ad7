import { Redis, type RedisOptions } from 'ioredis';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/**
 * BullMQ key prefix of the queue (FROGNANO_QUEUE_PREFIX), or undefined for BullMQ's default (`bull`).
 * The app and every runner read it here, so a prefix set on both sides names the same queue.
 */
export function queuePrefixFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.FROGNANO_QUEUE_PREFIX?.trim() || undefined;
}

/**
 * One ioredis connection. BullMQ workers and blocking commands require
 * `maxRetriesPerRequest: null`; we use it everywhere so a connection can be shared with BullMQ.
 */
export function createRedisConnection(url: string = redisUrlFromEnv(), opts: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...opts });
}
