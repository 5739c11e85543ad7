import type { Redis } from 'ioredis';
import { JobResultSchema, readRunnerProgress } from '../queue/schema.js';
import { getCancelRequest } from '../queue/cancel.js';
import { isStalledFailure, stalledFailureText } from '../queue/stalled.js';
import type { FairShare } from '../queue/fairShare/dispatcher.js';
import { queuePosition, isPendingState, type FrognanoJob, type FrognanoQueue } from '../queue/queue.js';
import { runningState, type StatusState } from '../github/statusComment.js';

/** Translates a BullMQ job's live state into what the status comment shows (a held job's place: fair order). */
export async function statusOfJob(
  queue: FrognanoQueue,
  redis: Redis,
  job: FrognanoJob,
  fair?: FairShare,
): Promise<StatusState | null> {
  const state = await job.getState();
  const id = job.id!;
  if (state === 'delayed' && fair) return { kind: 'queued', position: await fair.position(id) };
  if (isPendingState(state)) return { kind: 'queued', position: await queuePosition(queue, id) };
  if (state === 'active') {
    return runningState(readRunnerProgress(job.progress), await getCancelRequest(redis, id));
  }
  if (state === 'completed') {
    const r = JobResultSchema.safeParse(job.returnvalue);
    if (!r.success) return { kind: 'failed', reason: 'The runner finished but reported a result I could not read.' };
    const v = r.data;
    switch (v.outcome) {
      case 'pull_request':
        if (v.pullRequestUrl && v.pullRequestNumber)
          return { kind: 'pull_request', url: v.pullRequestUrl, number: v.pullRequestNumber };
        return { kind: 'failed', reason: 'The runner reported a pull request without its address.' };
      case 'no_patch':
        return { kind: 'no_patch', reason: v.reason ?? `The run ended (${v.exitReason}) without changes.` };
      case 'refused':
        return { kind: 'failed', reason: v.reason ?? v.exitReason };
      case 'cancelled':
        return { kind: 'cancelled', by: (await getCancelRequest(redis, id))?.by };
    }
  }
  if (state === 'failed') {
    const cancel = await getCancelRequest(redis, id);
    if (cancel) return { kind: 'cancelled', by: cancel.by };
    if (isStalledFailure(job.failedReason)) return { kind: 'failed', reason: stalledFailureText(job.stalledCounter) };
    return { kind: 'failed', reason: job.failedReason || 'The runner failed without giving a reason.' };
  }
  return null; // 'unknown': removed meanwhile
}
