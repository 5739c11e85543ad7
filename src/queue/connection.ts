import { Redis, type RedisOptions } from 'ioredis';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/**
 * One ioredis connection. BullMQ workers and blocking commands require
 * `maxRetriesPerRequest: null`; we use it everywhere so a connection can be shared with BullMQ.
 */
export function createRedisConnection(url: string = redisUrlFromEnv(), opts: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...opts });
}
