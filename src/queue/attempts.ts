import type { Redis } from 'ioredis';

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
  return `frognano:attempt:${issueSlug(k)}`;
}

/** The latest attempt number, or null when the issue never ran. */
export async function currentAttempt(redis: Redis, k: IssueKey): Promise<number | null> {
  const v = Number(await redis.get(attemptKey(k)));
  return Number.isInteger(v) && v > 0 ? v : null;
}

/** The attempt a label starts: 1 for a fresh issue, otherwise the latest one (which may already have run). */
export async function labelAttempt(redis: Redis, k: IssueKey): Promise<number> {
  await redis.set(attemptKey(k), '1', 'NX');
  return (await currentAttempt(redis, k)) ?? 1;
}

/** Allocates the next attempt number atomically (retry). */
export async function nextAttempt(redis: Redis, k: IssueKey): Promise<number> {
  return redis.incr(attemptKey(k));
}
