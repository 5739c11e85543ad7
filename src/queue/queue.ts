import { Queue, type Job, type ConnectionOptions } from 'bullmq';
import { JobDataSchema, QUEUE_NAME, jobIdFor, type JobData, type JobResult } from './schema.js';

export type FrognanoQueue = Queue<JobData, JobResult, string>;
export type FrognanoJob = Job<JobData, JobResult, string>;

/** Finished jobs are kept this long: their ids block re-runs (only `/frognano retry` starts a new attempt). */
export const KEEP_FINISHED_SECONDS = 90 * 24 * 3600;

export function createQueue(connection: ConnectionOptions, opts: { prefix?: string } = {}): FrognanoQueue {
  return new Queue<JobData, JobResult, string>(QUEUE_NAME, {
    connection,
    ...(opts.prefix ? { prefix: opts.prefix } : {}),
    defaultJobOptions: {
      // A model run is expensive and may have side effects (a pushed branch): never retry automatically.
      attempts: 1,
      removeOnComplete: { age: KEEP_FINISHED_SECONDS, count: 10_000 },
      removeOnFail: { age: KEEP_FINISHED_SECONDS, count: 10_000 },
    },
  });
}

export interface EnqueueResult {
  /** false when a job with the same deterministic id already existed (any state). */
  created: boolean;
  job: FrognanoJob;
}

/**
 * Validates the payload and adds it under its deterministic id. A redelivered webhook or a second
 * label maps onto the same id, so BullMQ keeps the first job; we read the stored job back to tell
 * the caller whether it was theirs. `delayMs` adds it held (delayed): the fair share promotes it (fairShare/).
 */
export async function enqueueJob(
  queue: FrognanoQueue,
  data: JobData,
  opts: { delayMs?: number } = {},
): Promise<EnqueueResult> {
  const parsed = JobDataSchema.parse(data);
  const jobId = jobIdFor(parsed);
  const existing = await queue.getJob(jobId);
  if (existing) return { created: false, job: existing };
  const added = await queue.add(QUEUE_NAME, parsed, { jobId, ...(opts.delayMs ? { delay: opts.delayMs } : {}) });
  const stored = await queue.getJob(jobId);
  if (!stored) return { created: true, job: added }; // already processed and removed: it was ours
  const ours = stored.data.enqueuedAt === parsed.enqueuedAt && stored.data.deliveryId === parsed.deliveryId;
  return { created: ours, job: stored };
}

export type JobStateName = Awaited<ReturnType<FrognanoJob['getState']>>;

export function isPendingState(state: JobStateName | string): boolean {
  return state === 'waiting' || state === 'delayed' || state === 'prioritized' || state === 'waiting-children';
}

export function isUnfinishedState(state: JobStateName | string): boolean {
  return isPendingState(state) || state === 'active';
}

/** 1-based place of a waiting job in line (1 = next), or undefined when not waiting / too far back to count. */
export async function queuePosition(queue: FrognanoQueue, jobId: string, scan = 1000): Promise<number | undefined> {
  const jobs = await queue.getJobs(['prioritized', 'waiting'], 0, scan - 1, true);
  const i = jobs.findIndex((j) => j?.id === jobId);
  return i >= 0 ? i + 1 : undefined;
}
