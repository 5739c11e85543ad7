import { describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker } from 'bullmq';
import { createQueue, enqueueJob, queuePosition, isUnfinishedState } from '../../src/queue/queue.js';
import { QUEUE_NAME, jobIdFor, type JobData } from '../../src/queue/schema.js';
import { sampleJob as data } from '../support/tenantJobs.js';
import { useQueueRedis, REDIS_URL } from '../support/queueRedis.js';
import { currentAttempt, labelAttempt, nextAttempt } from '../../src/queue/attempts.js';
import { claimOnce, LockBusyError, withRedisLock } from '../../src/queue/lock.js';
import { queuePrefixFromEnv } from '../../src/queue/connection.js';
import { runnerConfigFromEnv } from '../../src/runner/config.js';

const q = useQueueRedis('queue', { emptyEach: true });

describe('enqueueJob', () => {
  test('adds the job under its deterministic id with the validated data', async () => {
    const d = data();
    const { created, job } = await enqueueJob(q.queue, d);
    expect(created).toBe(true);
    expect(job.id).toBe('octo-org/hello.world#7@1');
    const stored = await q.queue.getJob('octo-org/hello.world#7@1');
    expect(stored!.data).toEqual(d);
    expect(stored!.opts.attempts).toBe(1); // never retried automatically
  });

  test('a second enqueue of the same attempt (redelivery) keeps the first job', async () => {
    const first = data({ deliveryId: 'first' });
    await enqueueJob(q.queue, first);
    const again = await enqueueJob(q.queue, data({ deliveryId: 'second' }));
    expect(again.created).toBe(false);
    expect(again.job.data.deliveryId).toBe('first');
    expect(await q.queue.count()).toBe(1);
  });

  test('concurrent enqueues of one attempt create exactly one job', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => enqueueJob(q.queue, data({ deliveryId: `d${i}` }))),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await q.queue.count()).toBe(1);
  });

  test('a finished job with the same id still blocks re-adding it', async () => {
    await enqueueJob(q.queue, data());
    const wconn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(QUEUE_NAME, null, { connection: wconn, prefix: q.bullPrefix, autorun: false });
    const job = await worker.getNextJob('tok');
    await job!.moveToCompleted({ outcome: 'no_patch', exitReason: 'done', turns: 1, elapsedSeconds: 1 }, 'tok', false);
    await worker.close();
    await wconn.quit();
    const again = await enqueueJob(q.queue, data());
    expect(again.created).toBe(false);
    expect(await again.job.getState()).toBe('completed');
    expect(isUnfinishedState(await again.job.getState())).toBe(false);
    // The next attempt is a new id.
    expect((await enqueueJob(q.queue, data({ attempt: 2 }))).created).toBe(true);
  });

  test('invalid payloads are rejected before reaching Redis', async () => {
    await expect(enqueueJob(q.queue, data({ owner: 'bad owner!' }))).rejects.toThrow(/owner/);
    await expect(enqueueJob(q.queue, data({ attempt: 0 }))).rejects.toThrow();
    await expect(enqueueJob(q.queue, { ...data(), installationId: undefined } as unknown as JobData)).rejects.toThrow();
    expect(await q.queue.count()).toBe(0);
  });

  test('queuePosition counts from the job a runner takes next', async () => {
    for (const n of [1, 2, 3]) await enqueueJob(q.queue, data({ issueNumber: n }));
    expect(
      await queuePosition(q.queue, jobIdFor({ owner: 'Octo-Org', repo: 'Hello.World', issueNumber: 1, attempt: 1 })),
    ).toBe(1);
    expect(
      await queuePosition(q.queue, jobIdFor({ owner: 'Octo-Org', repo: 'Hello.World', issueNumber: 3, attempt: 1 })),
    ).toBe(3);
    expect(await queuePosition(q.queue, 'missing')).toBeUndefined();
  });
});

describe('attempt numbers', () => {
  const key = { owner: 'Octo-Org', repo: 'Hello.World', issueNumber: 7 };

  test('a label starts attempt 1 once; retries count up; a later label refers to the latest', async () => {
    expect(await currentAttempt(q.redis, key)).toBeNull();
    expect(await labelAttempt(q.redis, key)).toEqual({ attempt: 1, fresh: true });
    expect(await labelAttempt(q.redis, key)).toEqual({ attempt: 1, fresh: false });
    expect(await nextAttempt(q.redis, key)).toBe(2);
    expect(await labelAttempt(q.redis, key)).toEqual({ attempt: 2, fresh: false });
    // Owner/repo case does not split the counter.
    expect(await currentAttempt(q.redis, { ...key, owner: 'octo-org', repo: 'hello.world' })).toBe(2);
  });

  test('concurrent labels: exactly one sees a fresh attempt', async () => {
    const k = { ...key, issueNumber: 50 };
    const r = await Promise.all([labelAttempt(q.redis, k), labelAttempt(q.redis, k), labelAttempt(q.redis, k)]);
    expect(r.filter((x) => x.fresh)).toHaveLength(1);
    expect(r.every((x) => x.attempt === 1)).toBe(true);
  });

  test('retry without a prior label starts at 1', async () => {
    expect(await nextAttempt(q.redis, { ...key, issueNumber: 99 })).toBe(1);
  });
});

describe('locks and claims', () => {
  test('claimOnce is true exactly once', async () => {
    const r = await Promise.all([
      claimOnce(q.redis, 'c1', 60),
      claimOnce(q.redis, 'c1', 60),
      claimOnce(q.redis, 'c1', 60),
    ]);
    expect(r.filter(Boolean)).toHaveLength(1);
  });

  test('withRedisLock serialises critical sections', async () => {
    const events: string[] = [];
    const section = (name: string) =>
      withRedisLock(q.redis, 'lock1', async () => {
        events.push(`${name}:in`);
        await new Promise((r) => setTimeout(r, 60));
        events.push(`${name}:out`);
      });
    await Promise.all([section('a'), section('b')]);
    expect(events[0]!.endsWith(':in')).toBe(true);
    expect(events[1]).toBe(events[0]!.replace(':in', ':out'));
    expect(await q.redis.exists('lock1')).toBe(0); // released
  });

  test('withRedisLock: a holder slower than the lock life keeps it; a waiter never runs without it', async () => {
    const events: string[] = [];
    const slow = withRedisLock(
      q.redis,
      'lock2',
      async () => {
        events.push('slow:in');
        await new Promise((r) => setTimeout(r, 700)); // more than twice the 200 ms life: renewed meanwhile
        events.push('slow:out');
      },
      200,
    );
    await new Promise((r) => setTimeout(r, 50));
    const patient = withRedisLock(q.redis, 'lock2', async () => void events.push('patient:in'), 200, 2_000);
    const impatient = withRedisLock(q.redis, 'lock2', async () => void events.push('impatient:in'), 200, 300);
    await expect(impatient).rejects.toBeInstanceOf(LockBusyError);
    await Promise.all([slow, patient]);
    expect(events).toEqual(['slow:in', 'slow:out', 'patient:in']);
    expect(await q.redis.exists('lock2')).toBe(0);
  });
});

describe('queue prefix (FROGNANO_QUEUE_PREFIX)', () => {
  test("unset or blank means BullMQ's default; a value is trimmed", () => {
    expect(queuePrefixFromEnv({})).toBeUndefined();
    expect(queuePrefixFromEnv({ FROGNANO_QUEUE_PREFIX: '  ' })).toBeUndefined();
    expect(queuePrefixFromEnv({ FROGNANO_QUEUE_PREFIX: ' team-a ' })).toBe('team-a');
  });

  test('the runner reads the prefix the app reads, and takes the jobs the app queued under it', async () => {
    const env = {
      FROGNANO_QUEUE_PREFIX: ` ${q.ns}-shared `,
      APP_ID: '1',
      PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----',
    };
    const appPrefix = queuePrefixFromEnv(env);
    const runnerPrefix = runnerConfigFromEnv(env).queuePrefix;
    expect(runnerPrefix).toBe(appPrefix);
    const appQueue = createQueue(q.conn, { prefix: appPrefix });
    const wconn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const worker = new Worker(QUEUE_NAME, null, { connection: wconn, prefix: runnerPrefix, autorun: false });
    try {
      await enqueueJob(appQueue, data({ issueNumber: 321 }));
      const taken = await worker.getNextJob('tok', { block: false });
      expect(taken?.id).toBe('octo-org/hello.world#321@1');
    } finally {
      await worker.close();
      await appQueue.obliterate({ force: true });
      await appQueue.close();
      await wconn.quit();
    }
  });
});
