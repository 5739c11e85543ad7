import type { Logger } from 'pino';
import { upsertStatusComment } from '../github/statusComment.js';
import type { FollowUpRequest } from '../queue/asks.js';
import { pullRequestKey, startWaitingRound } from '../queue/followUps.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { JobDataSchema, jobIdFor, type JobData } from '../queue/schema.js';
import { forgetSecretLater, installationAccessFor } from './jobSupport.js';
import type { RunnerContext } from './types.js';

/**
 * The end of a round on a pull request starts its next round from the asks that waited meanwhile
 * (src/queue/asks.ts). The runner does it when a round ends whatever the outcome, and when BullMQ gives up on a
 * stalled round; a hand-back does not, as the round runs again later. The app starts a round itself when an ask
 * finds no unfinished round, so asks left by a runner that died before it got here are not stranded.
 */

/** The pull request round a job is, when it is one (a first attempt on an issue is not). */
export function pullRequestRound(
  data: JobData,
): { owner: string; repo: string; pullNumber: number; round: number } | null {
  if (data.followUp)
    return { owner: data.owner, repo: data.repo, pullNumber: data.followUp.pullNumber, round: data.followUp.round };
  return null;
}

/** Never throws: the round's own result stands; waiting asks that could not start still wait (logged). */
export async function startNextRound(
  queue: FrognanoQueue,
  ctx: RunnerContext,
  jobData: unknown,
  log: Logger,
): Promise<void> {
  const parsed = JobDataSchema.safeParse(jobData);
  const ended = parsed.success ? pullRequestRound(parsed.data) : null;
  if (!ended) return;
  const key = pullRequestKey(ended.owner, ended.repo, ended.pullNumber);
  try {
    const next = await startWaitingRound(queue, ctx.redis, key, ended.round, (round, req) =>
      announceRound(ctx, round, req, log),
    );
    if (next)
      log.info(
        { round: next.round, asks: next.asks, jobId: next.job.id },
        'queued the next round from the waiting asks',
      );
  } catch (err) {
    log.error(
      { err, pr: ended.pullNumber, round: ended.round },
      'could not start the next round from the waiting asks',
    );
  }
}

/** "Round N queued" on the pull request before the job exists, as the app writes it for an ask. */
async function announceRound(ctx: RunnerContext, round: number, req: FollowUpRequest, log: Logger): Promise<void> {
  const pr = pullRequestKey(req.owner, req.repo, req.followUp.pullNumber);
  try {
    const access = await installationAccessFor(ctx)(req.installationId, req.repo);
    try {
      const meta = {
        round,
        jobId: jobIdFor({ ...pr, attempt: round }),
        triggeredBy: req.triggeredBy.login,
        updatedAt: new Date(),
      };
      await upsertStatusComment(access.octokit, ctx.redis, pr, { kind: 'queued' }, meta);
    } finally {
      forgetSecretLater(access.token);
    }
  } catch (err) {
    // The job matters more than the comment: the runner that takes it writes the status when it starts.
    log.warn({ err }, 'could not write the status comment of the next round');
  }
}
