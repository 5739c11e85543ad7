import type { Redis } from 'ioredis';
import {
  addWaitingAsk,
  askId,
  mergeAsks,
  readWaitingAsks,
  waitingAsksKey,
  type FollowUpRequest,
  type WaitingAdded,
} from './asks.js';
import { currentAttempt, issueSlug, nextAttempt, type IssueKey } from './attempts.js';
import { withRedisLock } from './lock.js';
import { enqueueJob, isUnfinishedState, type EnqueueResult, type FrognanoJob, type FrognanoQueue } from './queue.js';
import { JobDataSchema, jobIdFor, type JobData } from './schema.js';
import { botKey } from './keys.js';
import { automaticSource } from './verifyRepair.js';
import type { QuotaRefusal } from './quotas/check.js';

export type { FollowUpRequest } from './asks.js';

/**
 * Follow-up rounds of a pull request are numbered like an issue's attempts, under the PR's own number
 * (PRs and issues share one number space): round N is the job `jobIdFor({owner, repo, issueNumber: pr,
 * attempt: N})`, so `/frognano cancel` and `/frognano status` on the PR find it without knowing it is one.
 */
export function pullRequestKey(owner: string, repo: string, pullNumber: number): IssueKey {
  return { owner, repo, issueNumber: pullNumber };
}

export function pullRequestLockKey(k: IssueKey): string {
  return botKey('issue-lock', issueSlug(k));
}

export type FollowUpEnqueued =
  /** `asks`: how many asks the round addresses (waiting ones merged in). */
  | { kind: 'queued'; round: number; job: FrognanoJob; created: boolean; asks: number }
  /** A round of this PR is queued or running: the ask waits for the next one (`added.count` wait now). */
  | { kind: 'waiting'; round: number; added: WaitingAdded }
  /** A CI fix while a round is unfinished or people's asks wait: nothing queued (that round pushes a new head). */
  | { kind: 'busy'; round: number | null }
  /** The round was not admitted by the quotas: nothing queued; the asks that waited still wait. */
  | { kind: 'over_quota'; refusal: QuotaRefusal };

/**
 * Admits the round about to be queued under the quotas (src/queue/quotas/check.ts: it holds its runner-seconds and
 * takes its hourly run, once per round however many asks it merges), or says why not. Called under the PR's lock.
 */
export type AdmitRound = (round: number, req: FollowUpRequest) => Promise<QuotaRefusal | null>;

/** Called under the PR's lock once the round number is known, before the job exists. */
export type BeforeEnqueue = (round: number, req: FollowUpRequest) => Promise<void>;

/** Adds a round's job: straight into the queue by default; the app and the runners pass the fair share's. */
export type EnqueueRound = (data: JobData) => Promise<EnqueueResult>;

/**
 * Queues the PR's next round for this ask, or, while a round of the PR is queued or running, keeps the ask for the
 * round after it (one round at a time, on one branch). Asks that waited for a round that never took them (its
 * runner died before it could) are merged in, oldest first. `beforeEnqueue` lets the app write the "queued"
 * status comment before the job exists, so a runner that starts at once never races it.
 */
export async function enqueueFollowUp(
  queue: FrognanoQueue,
  redis: Redis,
  req: FollowUpRequest,
  beforeEnqueue?: BeforeEnqueue,
  enqueue: EnqueueRound = (data) => enqueueJob(queue, data),
  admit?: AdmitRound,
): Promise<FollowUpEnqueued> {
  const key = pullRequestKey(req.owner, req.repo, req.followUp.pullNumber);
  // Bad input is refused before a round number is spent on it.
  JobDataSchema.parse({ ...req, followUp: { ...req.followUp, round: 1 } });
  return withRedisLock(redis, pullRequestLockKey(key), async () => {
    const busy = await unfinishedRound(queue, redis, key);
    // A CI fix or a verification repair answers the failures of one head: it never waits for, or merges with,
    // people's asks. The round that runs or waits will push a new head, which CI and verification see again.
    if (automaticSource(req.followUp.source)) {
      if (busy !== null || (await readWaitingAsks(redis, key)).length > 0)
        return { kind: 'busy' as const, round: busy };
      return enqueueRound(redis, key, [req], { enqueue, beforeEnqueue, admit });
    }
    if (busy !== null) return { kind: 'waiting' as const, round: busy, added: await addWaitingAsk(redis, key, req) };
    const waiting = await readWaitingAsks(redis, key);
    const asks = [...waiting.filter((w) => askId(w) !== askId(req)), req];
    return enqueueRound(redis, key, asks, { enqueue, beforeEnqueue, admit });
  });
}

/**
 * Called once a round of the PR has ended (any outcome; not a hand-back, which runs the round again later): the
 * asks that waited for it become the next round, exactly once. Marks the round ended first, so an ask that
 * arrives while its job is still finishing starts a round instead of waiting for a drain that already ran.
 * Nothing happens when a newer round exists already (someone else took the asks). Returns the queued round.
 */
export async function startWaitingRound(
  queue: FrognanoQueue,
  redis: Redis,
  key: IssueKey,
  endedRound: number,
  beforeEnqueue?: BeforeEnqueue,
  enqueue: EnqueueRound = (data) => enqueueJob(queue, data),
  admit?: AdmitRound,
): Promise<Extract<FollowUpEnqueued, { kind: 'queued' | 'over_quota' }> | null> {
  return withRedisLock(redis, pullRequestLockKey(key), async () => {
    if ((await currentAttempt(redis, key)) !== endedRound) return null;
    await redis.set(roundEndedKey(key), String(endedRound), 'EX', ROUND_ENDED_TTL_SECONDS);
    const waiting = await readWaitingAsks(redis, key);
    if (waiting.length === 0) return null;
    return enqueueRound(redis, key, waiting, { enqueue, beforeEnqueue, admit });
  });
}

/** The PR's current round while it is queued or running (and has not said it ended), else null. */
export async function unfinishedRound(queue: FrognanoQueue, redis: Redis, key: IssueKey): Promise<number | null> {
  const cur = await currentAttempt(redis, key);
  if (cur === null) return null;
  if (Number(await redis.get(roundEndedKey(key))) === cur) return null;
  const job = await queue.getJob(jobIdFor({ ...key, attempt: cur }));
  return job && isUnfinishedState(await job.getState()) ? cur : null;
}

async function enqueueRound(
  redis: Redis,
  key: IssueKey,
  asks: FollowUpRequest[],
  o: { enqueue: EnqueueRound; beforeEnqueue?: BeforeEnqueue; admit?: AdmitRound },
): Promise<Extract<FollowUpEnqueued, { kind: 'queued' | 'over_quota' }>> {
  const { enqueue, beforeEnqueue } = o;
  const req = mergeAsks(asks);
  // Under the lock the next number is the current one plus one: it is spent only once the round is admitted.
  const refusal = await o.admit?.(((await currentAttempt(redis, key)) ?? 0) + 1, req);
  if (refusal) return { kind: 'over_quota', refusal };
  const round = await nextAttempt(redis, key);
  await beforeEnqueue?.(round, req);
  const { created, job } = await enqueue({ ...req, followUp: { ...req.followUp, round } });
  // Only a round that exists takes the asks: if enqueueing failed they still wait, for the next ask or round end.
  await redis.del(waitingAsksKey(key));
  return { kind: 'queued', round, job, created, asks: asks.length };
}

/** The last round whose runner said it ended (its job may still be finishing in BullMQ). */
function roundEndedKey(k: IssueKey): string {
  return botKey('round-ended', issueSlug(k));
}

const ROUND_ENDED_TTL_SECONDS = 7 * 24 * 3600;
