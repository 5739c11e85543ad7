/**
 * Redis Sentinel failover under a running job: one master, one replica, three sentinels (real servers on free
 * loopback ports), a BullMQ worker with the runner's lock settings whose processor records its side effects in a
 * file, and the app's webhook server on fail-fast connections. The master is SIGKILLed while a job runs.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createQueue, enqueueJob, type FrognanoQueue } from '../../src/queue/queue.js';
import { QUEUE_NAME } from '../../src/queue/schema.js';
import type { RedisTarget } from '../../src/queue/redisConfig.js';
import { issueJob } from '../support/tenantJobs.js';
import { nockGitHubForLabels, startOutageApp, type OutageApp } from '../app/outageApp.js';
import { haveRedisTools, kill9, startSentinelGroup, stopAll, waitFor } from '../support/redisServers.js';
import type { SentinelGroup } from '../support/redisServers.js';

const run = haveRedisTools() ? describe : describe.skip;
const NAME = 'fnmaster';
const PREFIX = 'fn-sentinel';
const JOB_MS = 6000;

let group: SentinelGroup;
let dir: string;
let effects: string;
const opened: { close(): Promise<unknown> }[] = [];
const clients: Redis[] = [];

const data = (issueNumber: number) => issueJob('octo', 'ha', issueNumber);

function connect(target: RedisTarget, purpose: 'worker' | 'enqueue'): Redis {
  const c = createRedisConnection(target, { purpose });
  c.on('error', () => undefined); // refused connections during the failover are expected
  clients.push(c);
  return c;
}

function lines(): string[] {
  return readFileSync(effects, 'utf8').split('\n').filter(Boolean);
}

beforeAll(async () => {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  if (!haveRedisTools()) return;
  dir = mkdtempSync(join(tmpdir(), 'fn-sentinel-test-'));
  effects = join(dir, 'effects.log');
  writeFileSync(effects, '');
  group = await startSentinelGroup(NAME);
}, 60_000);

afterAll(async () => {
  for (const o of opened.reverse()) await o.close().catch(() => undefined);
  for (const c of clients) c.disconnect();
  await stopAll();
  if (dir) rmSync(dir, { recursive: true, force: true });
  nock.cleanAll();
  nock.enableNetConnect();
}, 30_000);

run('Redis Sentinel: kill -9 the master while a job runs', () => {
  test('the sentinels fail over; the job finishes exactly once; no job is lost or run twice; webhooks get 503 or queue', async () => {
    const target: RedisTarget = { mode: 'sentinel', sentinels: group.sentinelAddresses, name: NAME, tls: false };
    const picked = new Map<string, number>();
    // The runner's worker settings (runner/worker.ts): a lock that outlives a failover, stalled checks, no retries.
    const worker = new Worker(
      QUEUE_NAME,
      async (job) => {
        picked.set(job.id!, Date.now());
        appendFileSync(effects, `start ${job.id}\n`);
        await new Promise((r) => setTimeout(r, job.data.issueNumber === 1 ? JOB_MS : 200));
        appendFileSync(effects, `done ${job.id}\n`);
        return { outcome: 'no_patch' };
      },
      {
        connection: connect(target, 'worker'),
        prefix: PREFIX,
        concurrency: 4,
        lockDuration: 120_000,
        stalledInterval: 60_000,
        maxStalledCount: 2,
      },
    );
    worker.on('error', () => undefined);
    opened.push(worker);
    const runnerQueue = createQueue(connect(target, 'worker'), { prefix: PREFIX });
    runnerQueue.on('error', () => undefined);
    opened.push(runnerQueue);
    // The app: fail-fast connections and its webhook server, as src/app/server.ts wires them.
    const appQueueConnection = connect(target, 'enqueue');
    const appRedis = connect(target, 'enqueue');
    const appQueue: FrognanoQueue = createQueue(appQueueConnection, { prefix: PREFIX });
    appQueue.on('error', () => undefined);
    opened.push(appQueue);
    const app: OutageApp = await startOutageApp(appQueue, appRedis, [appQueueConnection, appRedis]);
    opened.push(app);
    nockGitHubForLabels();
    await waitFor(
      'the app connections',
      async () => appQueueConnection.status === 'ready' && appRedis.status === 'ready',
    );

    const first = await enqueueJob(runnerQueue, data(1));
    await waitFor('job 1 to start', async () => lines().includes(`start ${first.job.id}`));
    await new Promise((r) => setTimeout(r, 500)); // let the replica receive the job's active state and lock

    const killedAt = Date.now();
    await kill9(group.master);
    // Queued right after the kill on a runner-style connection: it waits for the new master, then runs.
    const secondAdded = enqueueJob(runnerQueue, data(2)).catch((e: unknown) => e as Error);
    // A webhook during the gap: answered 503 (redelivered later) or queued; never 500, never lost.
    const during = await app.label(3);
    expect([200, 503]).toContain(during);

    await waitFor(
      'the sentinels to promote the replica',
      async () => (await group.masterPort()) === group.replica.port,
      30_000,
    );
    const second = await secondAdded;
    expect(second).not.toBeInstanceOf(Error);
    const secondId = (second as Awaited<ReturnType<typeof enqueueJob>>).job.id!;
    await waitFor('job 2 to be picked up', async () => picked.has(secondId), 30_000);
    const pickupMs = picked.get(secondId)! - killedAt;
    await waitFor(
      'the app connections to reconnect',
      async () => appQueueConnection.status === 'ready' && appRedis.status === 'ready',
      30_000,
    );
    const redelivered = during === 503 ? await app.label(3) : during;
    expect(redelivered).toBe(200);
    const thirdId = 'codertocat/hello-world#3@1'; // the labeled example payload's issue, attempt 1

    for (const id of [first.job.id!, secondId, thirdId]) {
      await waitFor(
        `job ${id} to complete`,
        async () => (await runnerQueue.getJob(id))?.finishedOn !== undefined,
        30_000,
      );
      expect(await (await runnerQueue.getJob(id))!.getState()).toBe('completed');
    }
    // Exactly once each: one start and one done per job, nothing else.
    const log = lines();
    for (const id of [first.job.id!, secondId, thirdId]) {
      expect(log.filter((l) => l === `start ${id}`)).toHaveLength(1);
      expect(log.filter((l) => l === `done ${id}`)).toHaveLength(1);
    }
    expect(log).toHaveLength(6);
    console.log(
      `sentinel failover: kill -9 of the master -> next job picked up after ${pickupMs} ms; ` +
        `webhook during the gap answered ${during}; job running across the failover finished once`,
    );
  }, 90_000);
});
