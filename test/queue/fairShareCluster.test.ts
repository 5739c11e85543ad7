/**
 * The fair share's Lua scripts and the quotas' token bucket and ledger on a Redis Cluster of three masters: with
 * the cluster's `{frognano}` prefixes every key they build (tenant lines, dispatching set, buckets, ledgers) lands
 * in the queue's slot, so the scripts run where BullMQ's do.
 */
import { afterAll, beforeAll, expect, test, describe } from '@jest/globals';
import type { Redis } from 'ioredis';
import { createRedisConnection } from '../../src/queue/connection.js';
import { FairShare } from '../../src/queue/fairShare/dispatcher.js';
import { botKeyPrefix, setBotKeyPrefix } from '../../src/queue/keys.js';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';
import { checkQuotas } from '../../src/queue/quotas/check.js';
import { QuotasFileSchema } from '../../src/queue/quotas/schema.js';
import { recordRunnerSeconds, runnerSecondsUsed } from '../../src/queue/quotas/store.js';
import { redisConfigFromEnv, type RedisConfig } from '../../src/queue/redisConfig.js';
import type { JobData } from '../../src/queue/schema.js';
import { haveRedisTools, startCluster, stopAll, waitFor } from '../support/redisServers.js';

const run = haveRedisTools() ? describe : describe.skip;
let cfg: RedisConfig;
let redis: Redis;
let queue: FrognanoQueue;
const clients: Redis[] = [];
const previousPrefix = botKeyPrefix();

function job(owner: string, repo: string, issueNumber: number): JobData {
  return {
    installationId: 1,
    owner,
    repo,
    issueNumber,
    title: 't',
    body: 'b',
    defaultBranch: 'main',
    triggeredBy: { login: 'octocat', id: 1 },
    attempt: 1,
    trigger: 'label',
    enqueuedAt: new Date().toISOString(),
  };
}

function connect(): Redis {
  const c = createRedisConnection(cfg.target);
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  if (!haveRedisTools()) return;
  const nodes = await startCluster(3);
  cfg = redisConfigFromEnv({ REDIS_CLUSTER_NODES: nodes.map((n) => `127.0.0.1:${n.port}`).join(',') });
  setBotKeyPrefix(cfg.keyPrefix);
  redis = connect();
  queue = createQueue(connect(), { prefix: cfg.queuePrefix });
  await waitFor('the cluster client', async () => redis.status === 'ready');
}, 90_000);

afterAll(async () => {
  setBotKeyPrefix(previousPrefix);
  await queue?.close();
  for (const c of clients) c.disconnect();
  await stopAll();
}, 30_000);

run('Redis Cluster (3 masters): fair share and quotas', () => {
  test('held jobs are dispatched in fair order up to the slots; place, cancel and backlog work', async () => {
    let slots = 0;
    const fair = new FairShare(queue, redis, { slots: () => slots });
    expect(fair.root.startsWith('{frognano}:')).toBe(true);
    const ids: string[] = [];
    for (const [owner, repo, n] of [
      ['acme', 'a', 1],
      ['acme', 'a', 2],
      ['beta', 'b', 1],
      ['beta', 'b', 2],
    ] as const) {
      ids.push((await fair.enqueue(job(owner, repo, n))).job.id!);
    }
    await fair.kick();
    expect(await fair.position(ids[2]!)).toBe(2);
    expect(await fair.forget(ids[3]!)).toBe(true);
    await (await queue.getJob(ids[3]!))!.remove();
    slots = 2;
    expect((await fair.dispatch()).map((m) => m.jobId)).toEqual([ids[0], ids[2]]);
    expect(await queue.getJobCounts('waiting', 'delayed')).toMatchObject({ waiting: 2, delayed: 1 });
    expect(await fair.backlog()).toBe(1);
  });

  test('quotas: the token bucket and the ledger', async () => {
    const cfgQuotas = QuotasFileSchema.parse({ defaults: { runsPerHour: 1, runnerSecondsPerDay: 10 } });
    const t = { installation: 'acme', repository: 'acme/a' };
    expect(await checkQuotas(redis, cfgQuotas, t)).toBeNull();
    expect(await checkQuotas(redis, cfgQuotas, t)).toMatchObject({ quota: 'runsPerHour', used: 1, limit: 1 });
    await recordRunnerSeconds(redis, t, 12);
    expect(await runnerSecondsUsed(redis, t, 'day')).toEqual({ installation: 12, repository: 12 });
    expect(await checkQuotas(redis, cfgQuotas, t)).toMatchObject({ quota: 'runnerSecondsPerDay', used: 12 });
  });
});
