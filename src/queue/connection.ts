import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { DEFAULT_REDIS_URL, redisConfigFromEnv, type RedisTarget } from './redisConfig.js';

export { DEFAULT_REDIS_URL };

export function redisUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.REDIS_URL?.trim() || DEFAULT_REDIS_URL;
}

/**
 * BullMQ key prefix of the queue (FROGNANO_QUEUE_PREFIX), or undefined for BullMQ's default (`bull`).
 * The app and every runner read it here, so a prefix set on both sides names the same queue.
 * With REDIS_CLUSTER_NODES the default is the hash tag `{frognano}` (src/queue/redisConfig.ts).
 */
export function queuePrefixFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return redisConfigFromEnv(env).queuePrefix;
}

/**
 * What a connection is for:
 * - `worker`: BullMQ workers, blocking commands, subscribers, a runner's own keys. Commands wait through a Redis
 *   outage or a failover (`maxRetriesPerRequest: null`, which BullMQ requires for blocking connections) so a running
 *   job's lock renewal and its completion reach Redis once it is back.
 * - `enqueue`: the app's webhook path. Commands fail at once while Redis is unreachable (no offline queue, one
 *   retry, a command timeout), so the webhook is answered 503 and GitHub's redelivery brings it back later.
 */
export type ConnectionPurpose = 'worker' | 'enqueue';

/** How long an app command may wait for Redis before the webhook is answered 503. */
export const ENQUEUE_COMMAND_TIMEOUT_MS = 5000;

function purposeOptions(purpose: ConnectionPurpose): RedisOptions {
  return purpose === 'worker'
    ? { maxRetriesPerRequest: null }
    : { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: ENQUEUE_COMMAND_TIMEOUT_MS };
}

function sentinelOptions(t: Extract<RedisTarget, { mode: 'sentinel' }>): RedisOptions {
  return {
    sentinels: t.sentinels,
    name: t.name,
    ...(t.password ? { password: t.password } : {}),
    ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
    ...(t.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    // Not ioredis's `failoverDetector`: measured with a SIGKILLed master (test/queue/sentinelFailover.test.ts), its
    // reconnect raced the one already under way and ended the client ("Connection is closed.", queued commands
    // rejected) in 2 of 4 runs. A dead or demoted master drops its connections anyway, which starts the reconnect.
  };
}

function createCluster(t: Extract<RedisTarget, { mode: 'cluster' }>, opts: RedisOptions): Cluster {
  // These two are the Cluster's own options; the rest apply to each node's connection.
  const { enableOfflineQueue, lazyConnect, ...nodeOptions } = opts;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...nodeOptions, ...(t.password ? { password: t.password } : {}), ...(t.tls ? { tls: {} } : {}) },
    ...(enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
    ...(lazyConnect ? { lazyConnect } : {}),
    enableReadyCheck: true,
  };
  return new Cluster(t.nodes, clusterOptions);
}

/**
 * One ioredis connection to a single instance (a URL), a Sentinel-managed master or a Cluster.
 * A Cluster client is returned as `Redis`: ioredis gives both the same command interface, and the bot's callers
 * and BullMQ only use commands (every key of the bot shares one hash tag in a cluster; see redisConfig.ts).
 */
export function createRedisConnection(
  target: RedisTarget | string = redisConfigFromEnv().target,
  opts: Omit<RedisOptions, 'role'> & { purpose?: ConnectionPurpose } = {},
): Redis {
  const { purpose = 'worker', ...rest } = opts;
  const t: RedisTarget = typeof target === 'string' ? { mode: 'single', url: target } : target;
  const options: RedisOptions = { enableReadyCheck: true, ...purposeOptions(purpose), ...rest };
  if (t.mode === 'cluster') return createCluster(t, options) as unknown as Redis;
  if (t.mode === 'sentinel') return new Redis({ ...options, ...sentinelOptions(t) });
  return new Redis(t.url, options);
}
