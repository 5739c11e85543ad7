import type { ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { FairShare } from '../src/queue/fairShare/dispatcher.js';
import { createQueue } from '../src/queue/queue.js';

/**
 * The runner's side of the fair share (docs/operating-at-scale.md): when a job's model work is done, its slot
 * goes to the next job in fair order at once, so BullMQ hands that job to this runner in the same call that
 * finishes the last one. Best effort: the app's dispatcher does the same a moment later if this fails.
 */
export function createHandOff(o: { connection: ConnectionOptions; redis: Redis; prefix?: string; logger: Logger }) {
  const queue = createQueue(o.connection, { prefix: o.prefix });
  const fair = new FairShare(queue, o.redis, {});
  return {
    async jobEnding(jobId: string): Promise<void> {
      await fair.handOff(jobId).catch((err: unknown) => o.logger.warn({ err, jobId }, 'fair-share hand-off failed'));
    },
    close: () => queue.close(),
  };
}
