import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { issueSlug, type IssueKey } from './attempts.js';
import { claimOnce, HANDLED_TTL_SECONDS } from './lock.js';

/**
 * What a CI-fix round carries in its job: the failing checks on the pull request's head, by reference. The runner
 * reads their output, annotations and logs itself (src/runner/ciFix.ts): logs are large and links expire.
 */
export const MAX_FAILING_CHECKS = 100;

const FailingCheckSchema = z.object({
  /** `check` is a check run (GitHub Actions jobs included); `status` a commit status of third-party CI. */
  kind: z.enum(['check', 'status']),
  name: z.string().min(1).max(300),
  /** Check run id (for GitHub Actions it is also the job id). */
  id: z.number().int().positive().optional(),
  /** The check's app (`github-actions` for Actions jobs). */
  app: z.string().max(100).optional(),
  conclusion: z.string().max(50),
  description: z.string().max(1000).optional(),
  url: z.string().max(2000).optional(),
});
export type FailingCheck = z.infer<typeof FailingCheckSchema>;

export const CiFixSchema = z.object({
  /** The head commit whose checks failed. */
  headSha: z.string().regex(/^[0-9a-f]{40}$/, 'not a commit sha'),
  checks: z.array(FailingCheckSchema).min(1).max(MAX_FAILING_CHECKS),
  /** Failing checks left out of `checks` (more than MAX_FAILING_CHECKS). */
  omitted: z.number().int().nonnegative().default(0),
  /** 1 for the first automatic round in a row on this pull request. */
  streak: z.number().int().min(1).max(1000),
});
export type CiFix = z.infer<typeof CiFixSchema>;

const slug = (pr: IssueKey) => issueSlug(pr);

/** The failing checks a CI-fix round answers, for people: `lint`, `test` (and 3 more). */
export function answeredChecks(ci: Pick<CiFix, 'checks' | 'omitted'>, max = 5): string {
  const names = ci.checks.map((c) => `\`${c.name.replace(/`/g, "'")}\``);
  const more = names.length - max + ci.omitted;
  return `${names.slice(0, max).join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}

/** The status comment's line for a CI-fix round: no person asked for it, failing CI did. */
export function answeringText(ci: Pick<CiFix, 'checks' | 'omitted'>): string {
  return `Answering failing CI: ${answeredChecks(ci)}.`;
}

/**
 * One round per (pull request head, set of failing checks): the several events of one CI run, redeliveries and a
 * second app replica all land on the same key; the first claim wins.
 */
export function claimCiFailure(redis: Redis, pr: IssueKey, headSha: string, failing: string[]): Promise<boolean> {
  return claimOnce(redis, seenKey(pr, headSha, failing), HANDLED_TTL_SECONDS);
}

function seenKey(pr: IssueKey, headSha: string, failing: string[]): string {
  const names = [...new Set(failing)].sort().join('\n');
  const hash = createHash('sha256')
    .update(`${slug(pr)}@${headSha}\n${names}`)
    .digest('hex')
    .slice(0, 32);
  return `frognano:cifix:seen:${hash}`;
}

/** Lets a redelivery try again after the handler failed half-way. */
export async function releaseCiFailure(redis: Redis, pr: IssueKey, headSha: string, failing: string[]): Promise<void> {
  await redis.del(seenKey(pr, headSha, failing));
}

/** True the first time a note of this kind is posted on this pull request (the bot says each thing once). */
export function claimCiNote(redis: Redis, pr: IssueKey, note: string): Promise<boolean> {
  return claimOnce(redis, `frognano:cifix:note:${slug(pr)}:${note}`, HANDLED_TTL_SECONDS);
}

/** `/frognano autofix off|on` on a pull request. */
export async function setAutofix(redis: Redis, pr: IssueKey, on: boolean): Promise<void> {
  const key = `frognano:cifix:off:${slug(pr)}`;
  if (on) await redis.del(key);
  else await redis.set(key, '1', 'EX', 90 * 24 * 3600);
}

export async function autofixOff(redis: Redis, pr: IssueKey): Promise<boolean> {
  return (await redis.exists(`frognano:cifix:off:${slug(pr)}`)) === 1;
}

/**
 * Automatic rounds in a row: the round number of the last CI-fix round and how many came in a row. A round a person
 * asked for takes the next number, so the streak is broken (and the count reset) without anyone writing here.
 */
export async function ciStreak(redis: Redis, pr: IssueKey, currentRound: number | null): Promise<number> {
  const [round, count] = await redis.hmget(`frognano:cifix:streak:${slug(pr)}`, 'round', 'count');
  return currentRound !== null && Number(round) === currentRound ? Number(count) || 0 : 0;
}

export async function recordCiRound(redis: Redis, pr: IssueKey, round: number, streak: number): Promise<void> {
  const key = `frognano:cifix:streak:${slug(pr)}`;
  await redis.hset(key, { round: String(round), count: String(streak) });
  await redis.expire(key, 90 * 24 * 3600);
}
