import { readSetting } from '../util/settings.js';
import { describeRedisError, isRedisConnectionError } from '../util/redisState.js';
import { botKeyPrefix } from '../queue/keys.js';
import type { ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { listRunners } from '../ops/runnerRegistry.js';
import { FairShare, fairShareEnabled } from '../queue/fairShare/dispatcher.js';
import { startDispatchLoop } from '../queue/fairShare/loop.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { publishQuotas } from '../queue/quotas/published.js';
import { weightsOf, type QuotasConfig } from '../queue/quotas/schema.js';
import type { Log } from './deps.js';
import { quotasFileFromEnv, watchQuotasFile } from './quotaFile.js';

/**
 * Model slots the dispatcher fills: FROGNANO_MODEL_SLOTS when set (the runners' total concurrency), else one per
 * job slot of each live registered runner (its FROGNANO_CONCURRENCY), and at least one, so a runner that
 * scales up from zero finds a job.
 */
export async function modelSlots(redis: Redis, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const fixed = readSetting(env, 'FROGNANO_MODEL_SLOTS');
  if (fixed !== undefined) return fixed;
  const runners = await listRunners(redis, { prefix: botKeyPrefix() });
  return Math.max(
    1,
    runners.reduce((n, r) => n + r.concurrency, 0),
  );
}

const SLOTS_TTL_MS = 5000;

/** An unreachable Redis is said once by the connections' watchers (src/util/redisState.ts); other errors each time. */
function dispatchError(log: Log): (err: unknown) => void {
  return (err) => {
    if (!isRedisConnectionError(err)) log.warn({ err }, 'fair-share dispatch failed; the next event or tick retries');
  };
}

export interface SharedService {
  fairShare?: FairShare;
  quotas: () => QuotasConfig | null;
  stop(): Promise<void>;
}

/**
 * The app's side of a shared service: the quotas file (FROGNANO_QUOTAS_FILE; none: no quotas) and the fair-share
 * dispatcher (off with FROGNANO_FAIR_SHARE=off: jobs then go straight into the queue, first come first served).
 * `redis` must be a plain connection (no keyPrefix); `events` is a dedicated one for BullMQ's event stream (it blocks).
 */
export async function startSharedService(o: {
  queue: FrognanoQueue;
  redis: Redis;
  events: ConnectionOptions;
  prefix?: string;
  log: Log;
  env?: NodeJS.ProcessEnv;
}): Promise<SharedService> {
  const env = o.env ?? process.env;
  const path = quotasFileFromEnv(env);
  let fairShare: FairShare | undefined;
  const watch = path
    ? watchQuotasFile(path, {
        onChange: (cfg) => {
          o.log.info({ path }, 'quotas file changed; new limits apply');
          void publishQuotas(o.redis, cfg).catch((err: unknown) =>
            o.log.warn({ cause: describeRedisError(err) }, 'could not store the quotas for the runners'),
          );
          void fairShare
            ?.setWeights(weightsOf(cfg))
            .catch((err: unknown) => o.log.warn({ err }, 'could not store weights'));
        },
        onError: (err) => o.log.error({ err: err.message }, 'quotas file unreadable; keeping the previous version'),
      })
    : undefined;
  // The runners admit the rounds they queue themselves under the same limits (src/runner/quotaGate.ts).
  // While Redis is down a watcher (src/util/redisState.ts) has said so: one line with the cause, no stack.
  await publishQuotas(o.redis, watch?.current() ?? null).catch((err: unknown) =>
    o.log.warn(
      { cause: describeRedisError(err) },
      'could not store the quotas for the runners; the next change of the file retries',
    ),
  );
  let stopLoop = async () => {};
  if (fairShareEnabled(env)) {
    let slots = { value: 1, at: 0 };
    fairShare = new FairShare(o.queue, o.redis, {
      // Read at most every few seconds: listing runners costs round trips a freed slot would wait on.
      slots: async () => {
        if (Date.now() - slots.at > SLOTS_TTL_MS) slots = { value: await modelSlots(o.redis, env), at: Date.now() };
        return slots.value;
      },
      onError: dispatchError(o.log),
    });
    // Stored now, or before the first dispatch that reaches Redis (the app starts while Redis is down too).
    await fairShare.setWeights(weightsOf(watch?.current() ?? null)).catch(() => undefined);
    stopLoop = startDispatchLoop(fairShare, { connection: o.events, prefix: o.prefix, onError: dispatchError(o.log) });
  }
  return {
    fairShare,
    quotas: () => watch?.current() ?? null,
    async stop() {
      watch?.stop();
      await stopLoop();
    },
  };
}
