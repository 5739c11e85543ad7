import { QueueEvents, type ConnectionOptions } from 'bullmq';
import { QUEUE_NAME } from '../schema.js';
import type { FairShare } from './dispatcher.js';

/**
 * Runs the dispatcher when a slot frees (a job completed or failed, heard on BullMQ's event stream) and on a
 * slow tick as a safety net (a missed event, a runner that died, slots that grew). Every app replica may run
 * one: dispatch() is safe to run concurrently.
 */
export function startDispatchLoop(
  fair: FairShare,
  o: { connection: ConnectionOptions; prefix?: string; tickMs?: number; onError?: (err: Error) => void },
): () => Promise<void> {
  const events = new QueueEvents(QUEUE_NAME, { connection: o.connection, ...(o.prefix ? { prefix: o.prefix } : {}) });
  // Without a listener BullMQ prints every connection error to the console, several a second while Redis is down.
  events.on('error', (err) => o.onError?.(err));
  const kick = () => void fair.kick();
  for (const e of ['completed', 'failed', 'removed', 'stalled'] as const) events.on(e, kick);
  const timer = setInterval(kick, o.tickMs ?? 2000);
  timer.unref();
  kick();
  return async () => {
    clearInterval(timer);
    await events.close();
  };
}
