import { botKey } from './keys.js';
import type { Redis } from 'ioredis';
import { issueSlug, type IssueKey } from './attempts.js';
import { JobDataSchema, MAX_WAITING_ASKS, type Ask, type FollowUp, type JobData } from './schema.js';

/**
 * Asks that wait for a pull request's next round. A writer's `/frognano <text>` (or a review containing it)
 * that arrives while a round of the PR is queued or running is kept here, in Redis beside the jobs, so an app
 * restart or a dead runner loses none. When the round ends the waiting asks become one next round, merged
 * oldest first (src/queue/followUps.ts). Callers hold the PR's lock (`frognano:issue-lock:<slug>`).
 */

/** A round request before its round number is known. */
export type FollowUpRequest = Omit<JobData, 'followUp'> & { followUp: Omit<FollowUp, 'round'> };

/** Waiting asks outlive any sane round by far; the TTL only stops a forgotten PR's list from staying forever. */
const WAITING_TTL_SECONDS = 30 * 24 * 3600;

export function waitingAsksKey(k: IssueKey): string {
  return botKey('asks', issueSlug(k));
}

/** One ask per review, per comment (a redelivery of either is the same ask), else per webhook delivery. */
export function askId(req: FollowUpRequest): string {
  const f = req.followUp;
  if (f.reviewId) return `review:${f.reviewId}`;
  if (req.commentId) return `comment:${req.commentId}`;
  return `delivery:${req.deliveryId ?? req.enqueuedAt}`;
}

export type WaitingAdded =
  | { kind: 'added'; count: number }
  | { kind: 'duplicate'; count: number }
  /** MAX_WAITING_ASKS already wait. */
  | { kind: 'full'; count: number };

/** Keeps a request for the next round, once per ask. */
export async function addWaitingAsk(redis: Redis, k: IssueKey, req: FollowUpRequest): Promise<WaitingAdded> {
  const waiting = await readWaitingAsks(redis, k);
  const id = askId(req);
  if (waiting.some((w) => askId(w) === id)) return { kind: 'duplicate', count: waiting.length };
  if (waiting.length >= MAX_WAITING_ASKS) return { kind: 'full', count: waiting.length };
  const key = waitingAsksKey(k);
  await redis.multi().rpush(key, JSON.stringify(req)).expire(key, WAITING_TTL_SECONDS).exec();
  return { kind: 'added', count: waiting.length + 1 };
}

/** The waiting requests, oldest first; an entry that no longer parses (another version wrote it) is skipped. */
export async function readWaitingAsks(redis: Redis, k: IssueKey): Promise<FollowUpRequest[]> {
  const raw = await redis.lrange(waitingAsksKey(k), 0, -1);
  const out: FollowUpRequest[] = [];
  for (const r of raw) {
    const req = parseRequest(r);
    if (req) out.push(req);
  }
  return out;
}

/** Forgets the waiting asks (they became a round, or a writer cancelled); returns them. */
export async function takeWaitingAsks(redis: Redis, k: IssueKey): Promise<FollowUpRequest[]> {
  const waiting = await readWaitingAsks(redis, k);
  await redis.del(waitingAsksKey(k));
  return waiting;
}

function parseRequest(raw: string): FollowUpRequest | null {
  try {
    const v = JSON.parse(raw) as FollowUpRequest;
    const parsed = JobDataSchema.safeParse({ ...v, followUp: { ...v.followUp, round: 1 } });
    if (!parsed.success || !parsed.data.followUp) return null;
    const { round: _round, ...followUp } = parsed.data.followUp;
    return { ...parsed.data, followUp };
  } catch {
    return null;
  }
}

/** The ask a request carries, as a round lists it. */
export function askOf(req: FollowUpRequest): Ask {
  return {
    author: req.triggeredBy,
    ...singleAskFields(req),
    ...(req.commentId ? { commentId: req.commentId } : {}),
    askedAt: req.enqueuedAt,
  };
}

/**
 * One round for several asks, oldest first: the newest request gives what is freshest (the PR's head, the issue's
 * text, the delivery); the oldest gives the fields a single-ask round reads (who asked, the feedback), and
 * `asks` lists them all. A single request is returned as it is.
 */
export function mergeAsks(reqs: FollowUpRequest[]): FollowUpRequest {
  if (reqs.length === 0) throw new Error('mergeAsks: no asks');
  if (reqs.length === 1) return reqs[0]!;
  const oldest = reqs[0]!;
  const newest = reqs[reqs.length - 1]!;
  const { commentId: _commentId, ...base } = newest;
  const { reviewId: _reviewId, ...fresh } = newest.followUp;
  return {
    ...base,
    triggeredBy: oldest.triggeredBy,
    trigger: oldest.trigger,
    ...(oldest.commentId ? { commentId: oldest.commentId } : {}),
    followUp: { ...fresh, ...singleAskFields(oldest), asks: reqs.map(askOf) },
  };
}

type SingleAsk = Pick<FollowUp, 'feedback' | 'inlineComments' | 'omittedComments' | 'source' | 'reviewId'>;

function singleAskFields(req: FollowUpRequest): SingleAsk {
  const { feedback, inlineComments, omittedComments, source, reviewId } = req.followUp;
  return { feedback, inlineComments, omittedComments, source, ...(reviewId ? { reviewId } : {}) };
}
