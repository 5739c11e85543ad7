import { Queue, type ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { issueSlug, type IssueKey } from './attempts.js';
import { botKey } from './keys.js';

/**
 * When the app judges failing CI on the bot's pull request (docs/ci-fix.md, "When a round starts"): not on the
 * webhook itself but from a delayed job on the queue `frognano-ci-judge`, which the app's own worker runs. Every
 * completion on a head pushes that head's job back (BullMQ's deduplication in debounce mode: the delayed job is
 * replaced and its delay starts again), so the judgment comes `ciFix.settleSeconds` after the last completed check:
 * a workflow that registers its checks late is seen. A failure that arrives while a round of the pull request runs
 * is remembered and judged again when that round ends (the runner adds the job then; the head must not have moved).
 */
export const CI_JUDGE_QUEUE = 'frognano-ci-judge';

/** CI finished on a commit, as one shape for the four events (src/app/ciPayloads.ts builds it). */
export const CiEventSchema = z.object({
  event: z.string().max(100),
  owner: z.string().min(1).max(100),
  repo: z.string().min(1).max(100),
  installationId: z.number().int().positive(),
  defaultBranch: z.string().min(1).max(255),
  headSha: z.string().regex(/^[0-9a-f]{40}$/, 'not a commit sha'),
  branches: z.array(z.string().max(255)).max(100),
  /** The check run's name (check_run events only): the bot's own approval check is not CI. */
  checkName: z.string().max(300).optional(),
});
export type CiEvent = z.infer<typeof CiEventSchema>;

/** A judgment to make: the CI event, and whether it is the re-examination after a round (no new settle window). */
export const CiJudgmentSchema = z.object({ ev: CiEventSchema, after: z.enum(['settle', 'round']) });
export type CiJudgment = z.infer<typeof CiJudgmentSchema>;

export type CiJudgeQueue = Queue<CiJudgment>;

export function createCiJudgeQueue(connection: ConnectionOptions, prefix?: string): CiJudgeQueue {
  return new Queue<CiJudgment>(CI_JUDGE_QUEUE, {
    connection,
    ...(prefix ? { prefix } : {}),
    defaultJobOptions: {
      removeOnComplete: true,
      removeOnFail: 1000,
      attempts: 3,
      backoff: { type: 'exponential', delay: 5000 },
    },
  });
}

/** One judgment per head: `owner/repo@sha` (BullMQ forbids ':' in ids; these parts have none). */
function headId(ev: CiEvent): string {
  return `${ev.owner}/${ev.repo}@${ev.headSha}`.toLowerCase();
}

/**
 * Judges the head `delayMs` from now, replacing a judgment of the same head that still waits (so the window
 * starts again at each completion). A judgment already running is not touched; this one then runs after it.
 */
export async function scheduleCiJudgment(queue: CiJudgeQueue, j: CiJudgment, delayMs: number): Promise<void> {
  const ttl = Math.max(1, delayMs);
  await queue.add('judge', CiJudgmentSchema.parse(j), {
    delay: delayMs,
    deduplication: { id: headId(j.ev), ttl, extend: true, replace: true },
  });
}

const PENDING_TTL_SECONDS = 7 * 24 * 3600;

function pendingKey(pr: IssueKey): string {
  return botKey('cifix', 'pending', issueSlug(pr));
}

/** A failure that found a round of the pull request running: judged again when that round ends. */
export async function rememberCiFailure(redis: Redis, pr: IssueKey, ev: CiEvent): Promise<void> {
  await redis.set(pendingKey(pr), JSON.stringify(ev), 'EX', PENDING_TTL_SECONDS);
}

/** Takes the failure remembered for the pull request, if any (once: GETDEL). */
export async function takeCiFailure(redis: Redis, pr: IssueKey): Promise<CiEvent | null> {
  const text = await redis.getdel(pendingKey(pr));
  if (!text) return null;
  const parsed = CiEventSchema.safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : null;
}
