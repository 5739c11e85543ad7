import type { Redis } from 'ioredis';
import { botKey } from './keys.js';

/**
 * Attempt numbers per issue, kept in Redis so `/frognano retry` numbers stay stable across app
 * restarts and replicas. Attempt N of an issue is the BullMQ job `jobIdFor({..., attempt: N})`.
 */
export interface IssueKey {
  owner: string;
  repo: string;
  issueNumber: number;
}

export function issueSlug(k: IssueKey): string {
  return `${k.owner.toLowerCase()}/${k.repo.toLowerCase()}#${k.issueNumber}`;
}

export function attemptKey(k: IssueKey): string {
  return botKey('attempt', issueSlug(k));
}

/** The latest attempt number, or null when the issue never ran. */
export async function currentAttempt(redis: Redis, k: IssueKey): Promise<number | null> {
  const v = Number(await redis.get(attemptKey(k)));
  return Number.isInteger(v) && v > 0 ? v : null;
}

/**
 * The attempt a label refers to. `fresh` is true only when this call created the issue's counter
 * (attempt 1 of an issue that never ran); otherwise the latest attempt is returned, which may
 * already have run, been cancelled or expired — a label does not start those again.
 */
export async function labelAttempt(redis: Redis, k: IssueKey): Promise<{ attempt: number; fresh: boolean }> {
  const fresh = (await redis.set(attemptKey(k), '1', 'NX')) === 'OK';
  return { attempt: fresh ? 1 : ((await currentAttempt(redis, k)) ?? 1), fresh };
}

/** Undoes a fresh labelAttempt whose job could not be queued, so a redelivery can try again. */
export async function forgetFreshAttempt(redis: Redis, k: IssueKey): Promise<void> {
  await redis.del(attemptKey(k));
}

/** Allocates the next attempt number atomically (retry). */
export async function nextAttempt(redis: Redis, k: IssueKey): Promise<number> {
  return redis.incr(attemptKey(k));
}
