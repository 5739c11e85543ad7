/**
 * The queue tests' Redis, as BullMQ's tests share their queue and connection fixtures: one file's connections and
 * queue under a unique namespace (in this jest worker's database), opened before the file's tests, emptied before
 * each one where the file asks, and removed with every key under the namespace after them.
 *
 *   const q = useQueueRedis('asks');          // q.conn, q.redis (keys under `${q.ns}:`), q.queue (prefix q.bullPrefix)
 */
import { afterAll, beforeAll, beforeEach } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface QueueRedis {
  /** The unique namespace: `redis`'s key prefix (`${ns}:`) and the start of the queue's prefix. */
  readonly ns: string;
  /** The queue's BullMQ prefix, `${ns}-bull`, for a Worker or a script that reads its keys. */
  readonly bullPrefix: string;
  /** A plain connection (BullMQ's settings), the queue's. */
  readonly conn: Redis;
  /** The bot's store: keys under `${ns}:`, or plain (`keyPrefix: false`) where the subject prefixes them itself. */
  readonly redis: Redis;
  readonly queue: FrognanoQueue;
}

export function useQueueRedis(name: string, o: { emptyEach?: boolean; keyPrefix?: boolean } = {}): QueueRedis {
  const ns = `fn-test-${name}-${randomUUID().slice(0, 8)}`;
  let open: { conn: Redis; redis: Redis; queue: FrognanoQueue } | undefined;
  const get = () => {
    if (!open) throw new Error(`useQueueRedis(${name}): used before beforeAll opened it`);
    return open;
  };
  const empty = async () => {
    const { conn, queue } = get();
    await queue.obliterate({ force: true });
    const keys = await conn.keys(`${ns}*`);
    if (keys.length) await conn.del(...keys);
  };
  beforeAll(() => {
    const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const redis =
      o.keyPrefix === false
        ? new Redis(REDIS_URL, { maxRetriesPerRequest: null })
        : new Redis(REDIS_URL, { keyPrefix: `${ns}:` });
    open = { conn, redis, queue: createQueue(conn, { prefix: `${ns}-bull` }) };
  });
  afterAll(async () => {
    const { conn, redis, queue } = get();
    await empty();
    await queue.close();
    await Promise.all([conn.quit(), redis.quit()]);
  });
  if (o.emptyEach) beforeEach(empty);
  return {
    ns,
    bullPrefix: `${ns}-bull`,
    get conn() {
      return get().conn;
    },
    get redis() {
      return get().redis;
    },
    get queue() {
      return get().queue;
    },
  };
}
