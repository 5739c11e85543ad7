import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { FairShare, fairShareEnabled } from '../src/queue/fairShare/dispatcher.js';
import { enqueueJob, type EnqueueResult, type FrognanoQueue } from '../src/queue/queue.js';
import type { JobData } from '../src/queue/schema.js';

/**
 * The runner's side of the fair share (docs/operating-at-scale.md): when a job's model work is done, its slot
 * goes to the next job in fair order at once, so BullMQ hands that job to this runner in the same call that
 * finishes the last one (best effort: the app's dispatcher does the same a moment later if this fails). A round
 * the runner queues itself (the asks that waited for the one that ended) joins the line like any other job.
 * With FROGNANO_FAIR_SHARE=off (set on the app and the runners alike) both go straight to the queue.
 */
export function createHandOff(o: { queue: FrognanoQueue; redis: Redis; logger: Logger; env?: NodeJS.ProcessEnv }) {
  if (!fairShareEnabled(o.env)) {
    return { jobEnding: async (_jobId: string) => {}, enqueue: (data: JobData) => enqueueJob(o.queue, data) };
  }
  const fair = new FairShare(o.queue, o.redis, {});
  return {
    async jobEnding(jobId: string): Promise<void> {
      await fair.handOff(jobId).catch((err: unknown) => o.logger.warn({ err, jobId }, 'fair-share hand-off failed'));
    },
    enqueue: (data: JobData): Promise<EnqueueResult> => fair.enqueue(data),
  };
}
