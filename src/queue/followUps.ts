import type { Redis } from 'ioredis';
import { currentAttempt, issueSlug, nextAttempt, type IssueKey } from './attempts.js';
import { withRedisLock } from './lock.js';
import { enqueueJob, isUnfinishedState, type EnqueueResult, type FrognanoJob, type FrognanoQueue } from './queue.js';
import { JobDataSchema, jobIdFor, type FollowUp, type JobData } from './schema.js';
import { botKey } from './keys.js';

/**
 * Follow-up rounds of a pull request are numbered like an issue's attempts, under the PR's own number
 * (PRs and issues share one number space): round N is the job `jobIdFor({owner, repo, issueNumber: pr,
 * attempt: N})`, so `/frognano cancel` and `/frognano status` on the PR find it without knowing it is one.
 */
export function pullRequestKey(owner: string, repo: string, pullNumber: number): IssueKey {
  return { owner, repo, issueNumber: pullNumber };
}

export type FollowUpRequest = Omit<JobData, 'followUp'> & { followUp: Omit<FollowUp, 'round'> };

export type FollowUpEnqueued =
  | { kind: 'queued'; round: number; job: FrognanoJob; created: boolean }
  /** A round of this PR is queued or running: one at a time, on one branch. */
  | { kind: 'busy'; round: number; job: FrognanoJob };

/**
 * `beforeEnqueue` runs under the PR's lock once the round number is known and before the job exists (the
 * app writes the "queued" status comment there, so a runner that starts at once never races it). `enqueue` adds
 * the job (default: straight into the queue; the app passes its fair share's).
 */
export async function enqueueFollowUp(
  queue: FrognanoQueue,
  redis: Redis,
  req: FollowUpRequest,
  beforeEnqueue?: (round: number) => Promise<void>,
  enqueue: (data: JobData) => Promise<EnqueueResult> = (data) => enqueueJob(queue, data),
): Promise<FollowUpEnqueued> {
  const key = pullRequestKey(req.owner, req.repo, req.followUp.pullNumber);
  // Bad input is refused before a round number is spent on it.
  JobDataSchema.parse({ ...req, followUp: { ...req.followUp, round: 1 } });
  return withRedisLock(redis, botKey('issue-lock', issueSlug(key)), async () => {
    const cur = await currentAttempt(redis, key);
    if (cur !== null) {
      const job = await queue.getJob(jobIdFor({ ...key, attempt: cur }));
      if (job && isUnfinishedState(await job.getState())) return { kind: 'busy' as const, round: cur, job };
    }
    const round = await nextAttempt(redis, key);
    await beforeEnqueue?.(round);
    const { created, job } = await enqueue({ ...req, followUp: { ...req.followUp, round } });
    return { kind: 'queued' as const, round, job, created };
  });
}
