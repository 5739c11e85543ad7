/**
 * The queue's key flows on a Redis Cluster of three masters (real servers, `redis-cli --cluster create`), connected
 * as REDIS_CLUSTER_NODES would connect them: enqueue and dedupe, attempts, locks and claims, cancel, follow-ups, the
 * runner registry's MULTIs and a worker taking a job. Every key of the bot and of its queue carries the `{frognano}`
 * hash tag, so multi-key scripts and MULTI stay in one slot.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { currentAttempt, labelAttempt, nextAttempt } from '../../src/queue/attempts.js';
import { cancelKey, getCancelRequest, onCancel, requestCancel, type CancelRequest } from '../../src/queue/cancel.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { enqueueFollowUp } from '../../src/queue/followUps.js';
import { botKey, botKeyPrefix, setBotKeyPrefix } from '../../src/queue/keys.js';
import { claimOnce, withRedisLock } from '../../src/queue/lock.js';
import { createQueue, enqueueJob, type FrognanoQueue } from '../../src/queue/queue.js';
import { redisConfigFromEnv, type RedisConfig } from '../../src/queue/redisConfig.js';
import { QUEUE_NAME, type JobData } from '../../src/queue/schema.js';
import { listRunners, registerRunner } from '../../src/ops/runnerRegistry.js';
import { FairShare } from '../../src/queue/fairShare/dispatcher.js';
import { admitRun, checkQuotas } from '../../src/queue/quotas/check.js';
import { HOLD_GRACE_MS, heldSeconds, settleHold } from '../../src/queue/quotas/holds.js';
import { QuotasFileSchema } from '../../src/queue/quotas/schema.js';
import { recordRunnerSeconds, runnerSecondsUsed } from '../../src/queue/quotas/store.js';
import { issueJob, sampleFollowUp, sampleJob } from '../support/tenantJobs.js';
import { haveRedisTools, startCluster, stopAll, waitFor } from '../support/redisServers.js';

const run = haveRedisTools() ? describe : describe.skip;
let cfg: RedisConfig;
let redis: Redis;
let subscriber: Redis;
let queue: FrognanoQueue;
const clients: Redis[] = [];
const previousPrefix = botKeyPrefix();

const data = (over: Partial<JobData> = {}) => sampleJob({ title: 'Fix', ...over });
const followUp = (pullNumber: number) => sampleFollowUp({ pullNumber, feedback: '/frognano go' });

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
  subscriber = connect();
  queue = createQueue(connect(), { prefix: cfg.queuePrefix });
  await waitFor('the cluster client', async () => redis.status === 'ready');
}, 90_000);

afterAll(async () => {
  setBotKeyPrefix(previousPrefix);
  await queue?.close();
  for (const c of clients) c.disconnect();
  await stopAll();
}, 30_000);

run('Redis Cluster (3 masters): the queue key flows', () => {
  test('cluster settings default both prefixes to the {frognano} hash tag: one slot for every key', async () => {
    expect(cfg).toMatchObject({ queuePrefix: '{frognano}', keyPrefix: '{frognano}' });
    const slot = (k: string) => redis.call('CLUSTER', 'KEYSLOT', k);
    const slots = new Set(
      await Promise.all(
        [botKey('attempt', 'a/b#1'), botKey('runners'), `${cfg.queuePrefix}:${QUEUE_NAME}:wait`].map(slot),
      ),
    );
    expect(slots.size).toBe(1);
  });

  test('enqueue and dedupe: a redelivery and concurrent enqueues make one job', async () => {
    const d = data({ issueNumber: 1 });
    const first = await enqueueJob(queue, d);
    expect(first.created).toBe(true);
    expect((await enqueueJob(queue, { ...d, deliveryId: randomUUID() })).created).toBe(false);
    const many = await Promise.all([1, 2, 3, 4].map(() => enqueueJob(queue, data({ issueNumber: 2 }))));
    expect(many.filter((r) => r.created)).toHaveLength(1);
    expect(await queue.getJobCounts('waiting', 'prioritized')).toMatchObject({ waiting: 2 });
  });

  test('attempt numbers, locks and claims', async () => {
    const k = { owner: 'o', repo: 'r', issueNumber: 3 };
    expect(await labelAttempt(redis, k)).toEqual({ attempt: 1, fresh: true });
    expect((await labelAttempt(redis, k)).fresh).toBe(false);
    expect(await nextAttempt(redis, k)).toBe(2);
    expect(await currentAttempt(redis, k)).toBe(2);
    expect(await claimOnce(redis, botKey('comment', 'o/r#3', '1'), 60)).toBe(true);
    expect(await claimOnce(redis, botKey('comment', 'o/r#3', '1'), 60)).toBe(false);
    const order: string[] = [];
    const section = (n: string) =>
      withRedisLock(redis, botKey('issue-lock', 'o/r#3'), async () => {
        order.push(`${n}+`);
        await new Promise((r) => setTimeout(r, 50));
        order.push(`${n}-`);
      });
    await Promise.all([section('a'), section('b')]);
    expect([order.slice(0, 2), order.slice(2)]).toEqual([
      [order[0], order[0]!.replace('+', '-')],
      [order[2], order[2]!.replace('+', '-')],
    ]);
  });

  test('cancel: the key and the pub/sub message both reach a runner', async () => {
    const id = `o/r#${randomUUID().slice(0, 6)}@1`;
    const heard: CancelRequest[] = [];
    const stop = onCancel(subscriber, id, (r) => heard.push(r), { checker: redis });
    await new Promise((r) => setTimeout(r, 200));
    await requestCancel(redis, id, 'octocat');
    await waitFor('the cancel message', async () => heard.length > 0, 5000);
    expect(heard[0]).toMatchObject({ jobId: id, by: 'octocat' });
    expect(await getCancelRequest(redis, id)).toMatchObject({ by: 'octocat' });
    expect(cancelKey(id).startsWith('{frognano}:')).toBe(true);
    await stop();
  });

  test('follow-ups: numbered rounds, one at a time (an ask during a round waits)', async () => {
    expect(await enqueueFollowUp(queue, redis, followUp(12))).toMatchObject({ kind: 'queued', round: 1 });
    expect(await enqueueFollowUp(queue, redis, followUp(12))).toMatchObject({ kind: 'waiting', round: 1 });
  });

  test('the runner registry (MULTI over the runner hash and the set) works in one slot', async () => {
    const reg = await registerRunner({
      redis,
      prefix: botKeyPrefix(),
      model: 'm',
      backend: 'replay',
      gpu: { gpu: 'none' },
    });
    await reg.setCurrentJob('o/r#1@1');
    expect((await listRunners(redis, { prefix: botKeyPrefix() })).map((r) => r.currentJob)).toContain('o/r#1@1');
    await reg.stop();
    expect(await listRunners(redis, { prefix: botKeyPrefix() })).toEqual([]);
  });

  test('a worker takes the queued jobs and completes them', async () => {
    const done: string[] = [];
    const counts = await queue.getJobCounts('waiting', 'prioritized');
    const queued = counts.waiting! + counts.prioritized!;
    expect(queued).toBe(3); // two issues and one follow-up round
    const worker = new Worker(QUEUE_NAME, async (job) => void done.push(job.id!), {
      connection: connect(),
      prefix: cfg.queuePrefix,
    });
    worker.on('error', () => undefined);
    try {
      await waitFor(
        'the jobs to complete',
        async () => (await queue.getJobCounts('completed')).completed === queued,
        20_000,
      );
      expect(done).toHaveLength(queued);
      expect(new Set(done).size).toBe(queued);
    } finally {
      await worker.close();
    }
  });
});

// The fair share's scripts build their keys from the queue prefix, the quotas' from the bot's: both `{frognano}`.
run('Redis Cluster (3 masters): fair share and quotas', () => {
  test('held jobs are dispatched in fair order up to the slots; place, cancel and backlog work', async () => {
    const counts = await queue.getJobCounts('waiting', 'active', 'prioritized');
    const used = Object.values(counts).reduce((a, b) => a + b, 0);
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
      ids.push((await fair.enqueue(issueJob(owner, repo, n))).job.id!);
    }
    await fair.kick();
    expect(await fair.position(ids[2]!)).toBe(used + 2);
    expect(await fair.forget(ids[3]!)).toBe(true);
    await (await queue.getJob(ids[3]!))!.remove();
    slots = used + 2;
    expect((await fair.dispatch()).map((m) => m.jobId)).toEqual([ids[0], ids[2]]);
    expect(await fair.backlog()).toBe(1);
  });

  test("quotas: the token bucket, the ledger and the holds (whose sweep reads the queue's job keys)", async () => {
    const limits = QuotasFileSchema.parse({
      defaults: { runsPerHour: 1, runnerSecondsPerDay: 10, holdSecondsPerRun: 5 },
    });
    const t = { installation: 'acme', repository: 'acme/a' };
    const start = (jobId: string) => ({ jobId, jobKeyPrefix: queue.toKey('') });
    expect(await admitRun(redis, limits, t, start('q@1'))).toBeNull();
    expect(await admitRun(redis, limits, t, start('q@2'))).toMatchObject({ quota: 'runsPerHour', used: 1, limit: 1 });
    await settleHold(redis, t, 'q@1', 12);
    expect(await runnerSecondsUsed(redis, t, 'day')).toEqual({ installation: 12, repository: 12 });
    expect(await checkQuotas(redis, limits, t, queue.toKey(''))).toMatchObject({
      quota: 'runnerSecondsPerDay',
      used: 12,
    });
    // A hold whose job never appeared is swept by the next admission once the grace is over.
    const b = { installation: 'beta', repository: 'beta/b' };
    const noRuns = QuotasFileSchema.parse({ defaults: { runnerSecondsPerDay: 10, holdSecondsPerRun: 10 } });
    expect(await admitRun(redis, noRuns, b, start('gone@1'), new Date(Date.now() - HOLD_GRACE_MS - 1000))).toBeNull();
    expect(await admitRun(redis, noRuns, b, start('next@1'))).toBeNull();
    expect((await heldSeconds(redis, b)).jobs).toEqual(['next@1']);
  });
});
