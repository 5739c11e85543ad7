import type { Redis } from 'ioredis';
import { QUEUE_NAME } from '../schema.js';

/** Where the fair-share keys live: beside the queue's own, under the same BullMQ prefix (default `bull`). */
export function fairShareRoot(prefix?: string): string {
  return `${prefix ?? 'bull'}:${QUEUE_NAME}:fs`;
}

/**
 * Jobs the fair share still holds back (in tenants' lines, not yet in the runners' queue). BullMQ counts them as
 * `delayed`; a backlog metric or an autoscaler (KEDA) adds this to BullMQ's waiting count for the work that waits.
 * `redis`: a plain connection (no ioredis keyPrefix); `prefix`: FROGNANO_QUEUE_PREFIX.
 */
export async function fairShareBacklog(redis: Redis, prefix?: string): Promise<number> {
  return redis.hlen(`${fairShareRoot(prefix)}:where`);
}
