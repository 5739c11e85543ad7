import { UnrecoverableError } from 'bullmq';
import { JobDataSchema, type JobResult } from '../queue/schema.js';
import { ciFixRound } from './ciFix.js';
import { evalRound } from './evalRound.js';
import { firstAttempt } from './firstAttempt.js';
import { followUpRound } from './followUp.js';
import { runRound } from './round.js';
import { verifyRepairRound } from './verifyRepair.js';
import type { JobHandle, RunnerContext } from './types.js';

/**
 * Routes one job to its kind of round (src/runner/README.md): a CI fix or a follow-up on the bot's pull request, a first
 * attempt on an issue, or an eval instance (`frognano eval --queue`). Invalid job data fails at once, never retried.
 */
export async function processJob(job: JobHandle, ctx: RunnerContext, signal: AbortSignal): Promise<JobResult> {
  const parsed = JobDataSchema.safeParse(job.data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UnrecoverableError(`invalid job data: ${issue.path.join('.') || 'payload'}: ${issue.message}`);
  }
  const data = parsed.data;
  if (data.eval) return runRound(job, { ...data, eval: data.eval }, evalRound, ctx, signal);
  if (data.followUp && data.ciFix) {
    return runRound(job, { ...data, followUp: data.followUp, ciFix: data.ciFix }, ciFixRound, ctx, signal);
  }
  if (data.followUp && data.verifyRepair) {
    const repair = { ...data, followUp: data.followUp, verifyRepair: data.verifyRepair };
    return runRound(job, repair, verifyRepairRound, ctx, signal);
  }
  if (data.followUp) return runRound(job, { ...data, followUp: data.followUp }, followUpRound, ctx, signal);
  return runRound(job, data, firstAttempt, ctx, signal);
}
