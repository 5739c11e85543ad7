import { enqueueJob, type EnqueueResult } from '../queue/queue.js';
import type { JobData } from '../queue/schema.js';
import type { HandlerDeps } from './deps.js';

/** Into the fair share's line when the app runs one (src/queue/fairShare/), else straight into the queue. */
export function enqueue(deps: HandlerDeps, data: JobData): Promise<EnqueueResult> {
  return deps.fairShare ? deps.fairShare.enqueue(data) : enqueueJob(deps.queue, data);
}

/** The place in line a job for `data` gets if it is added now (counted before it joins, so the comment is first). */
export async function positionForNewJob(deps: HandlerDeps, data: JobData): Promise<number> {
  if (deps.fairShare) return deps.fairShare.positionIfAdded(data);
  return (await deps.queue.getJobCountByTypes('waiting', 'prioritized')) + 1;
}
