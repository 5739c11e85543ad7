import { upsertStatusComment, type StatusState } from '../github/statusComment.js';
import { getCancelRequest } from '../queue/cancel.js';
import { JobDataSchema, jobIdFor } from '../queue/schema.js';
import { stalledFailureText } from '../queue/stalled.js';
import { forgetSecretLater, installationAccessFor } from './jobSupport.js';
import type { RunnerContext } from './types.js';

/** The part of a BullMQ job this needs. */
export interface StalledJob {
  id?: string;
  data: unknown;
  /** How often the job stalled (BullMQ counts it). */
  stalledCounter?: number;
}

/**
 * Ends the issue's status comment for a job BullMQ failed because it stalled too often. processJob never
 * ran for that failure (the runner that was working on it is gone), so nothing else would replace the
 * comment's last "working on it". A cancel the maintainer asked for still reads as cancelled.
 * Returns the state written, or null when the job data cannot say which issue it was for.
 */
export async function reportStalledJob(job: StalledJob, ctx: RunnerContext): Promise<StatusState | null> {
  const parsed = JobDataSchema.safeParse(job.data);
  if (!parsed.success) return null;
  const d = parsed.data;
  const jobId = job.id ?? jobIdFor(d);
  const cancel = await getCancelRequest(ctx.redis, jobId);
  const state: StatusState = cancel
    ? { kind: 'cancelled', by: cancel.by }
    : { kind: 'failed', reason: stalledFailureText(job.stalledCounter) };
  const access = await installationAccessFor(ctx)(d.installationId, d.repo);
  try {
    // A follow-up round reports on its pull request, like the runner did while it worked.
    const issueNumber = d.followUp?.pullNumber ?? d.issueNumber;
    await upsertStatusComment(access.octokit, ctx.redis, { owner: d.owner, repo: d.repo, issueNumber }, state, {
      ...(d.followUp ? { round: d.followUp.round } : { attempt: d.attempt }),
      jobId,
      triggeredBy: d.triggeredBy.login,
      updatedAt: new Date(),
    });
  } finally {
    forgetSecretLater(access.token);
  }
  return state;
}
