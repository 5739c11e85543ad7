import type { Redis } from 'ioredis';
import { botKey } from './keys.js';

/**
 * Cancellation of a job, across processes: the app records the request under a key (so a runner
 * that checks late still sees it) and publishes on a channel (so a runner that is mid-job hears
 * it at once). The runner polls `isCancelRequested` between steps and/or listens with `onCancel`.
 */
export const CANCEL_CHANNEL = 'frognano:cancel';
const CANCEL_TTL_SECONDS = 7 * 24 * 3600;

export function cancelKey(jobId: string): string {
  return botKey('cancel', jobId);
}

export interface CancelRequest {
  jobId: string;
  by?: string;
  at: string;
}

/** Marks the job as cancelled and tells listening runners. Safe to call more than once. */
export async function requestCancel(redis: Redis, jobId: string, by?: string): Promise<void> {
  const req: CancelRequest = { jobId, at: new Date().toISOString(), ...(by ? { by } : {}) };
  const body = JSON.stringify(req);
  await redis.set(cancelKey(jobId), body, 'EX', CANCEL_TTL_SECONDS);
  await redis.publish(CANCEL_CHANNEL, body);
}

export async function isCancelRequested(redis: Redis, jobId: string): Promise<boolean> {
  return (await redis.exists(cancelKey(jobId))) === 1;
}

/** Who asked to cancel, if anyone did. */
export async function getCancelRequest(redis: Redis, jobId: string): Promise<CancelRequest | null> {
  const raw = await redis.get(cancelKey(jobId));
  return raw ? parseRequest(raw) : null;
}

export async function clearCancel(redis: Redis, jobId: string): Promise<void> {
  await redis.del(cancelKey(jobId));
}

function parseRequest(raw: string): CancelRequest | null {
  try {
    const v = JSON.parse(raw) as Partial<CancelRequest>;
    return typeof v.jobId === 'string' ? { jobId: v.jobId, by: v.by, at: String(v.at ?? '') } : null;
  } catch {
    return null;
  }
}

/**
 * Calls `cb` once when cancellation of `jobId` is requested (including a request made before this
 * call). `subscriber` must be a connection dedicated to pub/sub (ioredis puts it in subscriber mode);
 * several jobs may share one subscriber. Returns a function that stops listening.
 */
export function onCancel(
  subscriber: Redis,
  jobId: string,
  cb: (req: CancelRequest) => void,
  opts: { checker?: Redis } = {},
): () => Promise<void> {
  let fired = false;
  let stopped = false;
  const fire = (req: CancelRequest) => {
    if (fired || stopped) return;
    fired = true;
    cb(req);
  };
  const listener = (channel: string, message: string) => {
    if (channel !== CANCEL_CHANNEL) return;
    const req = parseRequest(message);
    if (req?.jobId === jobId) fire(req);
  };
  subscriber.on('message', listener);
  const subscribed = subscriber.subscribe(CANCEL_CHANNEL).then(async () => {
    // A request made before we subscribed only left the key behind.
    if (opts.checker) {
      const existing = await getCancelRequest(opts.checker, jobId);
      if (existing) fire(existing);
    }
  });
  subscribed.catch(() => undefined);
  return async () => {
    stopped = true;
    subscriber.off('message', listener);
    await subscribed.catch(() => undefined);
    // Other jobs may share the subscriber; only unsubscribe when nobody else listens.
    if (subscriber.listenerCount('message') === 0) await subscriber.unsubscribe(CANCEL_CHANNEL).catch(() => undefined);
  };
}
