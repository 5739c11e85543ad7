import type { Logger } from 'pino';
import { upsertStatusComment } from '../github/statusComment.js';
import type { InstallationAccess } from '../github/client.js';
import { readWaitingAsks, type FollowUpRequest } from '../queue/asks.js';
import type { IssueKey } from '../queue/attempts.js';
import { pullRequestKey, startWaitingRound, type EnqueueRound } from '../queue/followUps.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { JobDataSchema, jobIdFor, type JobData } from '../queue/schema.js';
import { forgetSecretLater, installationAccessFor } from './jobSupport.js';
import { runnerAdmit } from './quotaGate.js';
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
  enqueue?: EnqueueRound,
): Promise<void> {
  const parsed = JobDataSchema.safeParse(jobData);
  const ended = parsed.success ? pullRequestRound(parsed.data) : null;
  if (!parsed.success || !ended) return;
  const key = pullRequestKey(ended.owner, ended.repo, ended.pullNumber);
  // The token for the status comment is minted before the PR's lock is taken, so the locked part stays short.
  const access = await accessIfAsksWait(ctx, parsed.data, key, log);
  try {
    const announce = (round: number, req: FollowUpRequest) => announceRound(ctx, access, round, req, log);
    // The merged round is charged once, now that it starts (its asks were only checked when they were made).
    const admit = runnerAdmit(queue, ctx, key, {
      access: async () => access,
      what: 'The next round, for the asks that waited, was not queued (they still wait)',
      mark: 'next-round',
      log,
    });
    const next = await startWaitingRound(queue, ctx.redis, key, ended.round, announce, enqueue, admit);
    if (next?.kind === 'over_quota') log.info({ quota: next.refusal.quota }, 'the waiting asks stay: over quota');
    else if (next) {
      const fields = { round: next.round, asks: next.asks, jobId: next.job.id };
      log.info(fields, 'queued the next round from the waiting asks');
    }
  } catch (err) {
    const fields = { err, pr: ended.pullNumber, round: ended.round };
    log.error(fields, 'could not start the next round from the waiting asks');
  } finally {
    if (access) forgetSecretLater(access.token);
  }
}

async function accessIfAsksWait(
  ctx: RunnerContext,
  data: JobData,
  key: IssueKey,
  log: Logger,
): Promise<InstallationAccess | null> {
  const waiting = await readWaitingAsks(ctx.redis, key).catch(() => []);
  if (waiting.length === 0) return null;
  return installationAccessFor(ctx)(data.installationId, data.repo).catch((err: unknown) => {
    log.warn({ err }, 'could not get a token to announce the next round');
    return null;
  });
}

/** "Round N queued" on the pull request before the job exists, as the app writes it for an ask. */
async function announceRound(
  ctx: RunnerContext,
  access: InstallationAccess | null,
  round: number,
  req: FollowUpRequest,
  log: Logger,
): Promise<void> {
  // Without a token (an ask came just now) the runner that takes the round writes its status when it starts.
  if (!access) return;
  const pr = pullRequestKey(req.owner, req.repo, req.followUp.pullNumber);
  const meta = {
    round,
    jobId: jobIdFor({ ...pr, attempt: round }),
    triggeredBy: req.triggeredBy.login,
    updatedAt: new Date(),
  };
  await upsertStatusComment(access.octokit, ctx.redis, pr, { kind: 'queued' }, meta).catch((err: unknown) =>
    // The job matters more than the comment: the runner that takes it writes the status when it starts.
    log.warn({ err }, 'could not write the status comment of the next round'),
  );
}
