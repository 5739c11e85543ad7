import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { isRedisOutage } from '../../src/app/redisOutage.js';
import { redisCheck, runReadinessChecks } from '../../src/ops/http.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';
import {
  freePort,
  haveRedisTools,
  kill9,
  startRedis,
  stopAll,
  waitFor,
  type RedisProcess,
} from '../support/redisServers.js';
import { nockGitHubForLabels, startOutageApp, type OutageApp } from './outageApp.js';

const run = haveRedisTools() ? describe : describe.skip;
let server: RedisProcess;
let queueConnection: Redis;
let redis: Redis;
let queue: FrognanoQueue;
let app: OutageApp;
const extra: { close(): Promise<unknown> }[] = [];
const extraConnections: Redis[] = [];

beforeAll(async () => {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  if (!haveRedisTools()) return;
  server = await startRedis();
  const url = `redis://127.0.0.1:${server.port}`;
  // As src/app/main.ts makes them: fail-fast connections for the webhook path.
  queueConnection = createRedisConnection(url, { purpose: 'enqueue' });
  redis = createRedisConnection(url, { purpose: 'enqueue' });
  for (const c of [queueConnection, redis]) c.on('error', () => undefined);
  queue = createQueue(queueConnection, { prefix: 'fn-outage' });
  queue.on('error', () => undefined);
  app = await startOutageApp(queue, redis, [queueConnection, redis]);
  await waitFor('the connections', async () => queueConnection.status === 'ready' && redis.status === 'ready');
}, 30_000);

afterAll(async () => {
  await app?.close();
  for (const o of extra) await o.close().catch(() => undefined);
  for (const c of extraConnections) c.disconnect();
  await queue?.close().catch(() => undefined);
  for (const c of [queueConnection, redis]) c?.disconnect();
  await stopAll();
  nock.cleanAll();
  nock.enableNetConnect();
});

describe('isRedisOutage', () => {
  test('knows ioredis\'s "unreachable" errors from errors Redis answered', () => {
    expect(isRedisOutage(new Error("Stream isn't writeable and enableOfflineQueue options is false"))).toBe(true);
    expect(isRedisOutage(Object.assign(new Error('x'), { name: 'MaxRetriesPerRequestError' }))).toBe(true);
    expect(isRedisOutage(new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBe(true);
    expect(isRedisOutage(new Error('Command timed out'))).toBe(true);
    expect(isRedisOutage(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(false);
    expect(isRedisOutage('ECONNREFUSED')).toBe(false);
  });
});

run('webhooks while Redis is unreachable (real redis-server, killed and restarted)', () => {
  test('answered 503 at once (not 500, not a hang), /readyz says so, and a redelivery queues the job once Redis is back', async () => {
    nockGitHubForLabels();
    expect(await app.label(1)).toBe(200);
    expect(await queue.getJob('codertocat/hello-world#1@1')).toBeDefined();

    await kill9(server);
    await waitFor(
      'the connections to notice',
      async () => queueConnection.status !== 'ready' && redis.status !== 'ready',
    );
    const started = Date.now();
    expect(await app.label(2)).toBe(503);
    const ms = Date.now() - started;
    expect(ms).toBeLessThan(2000);
    const ready = await runReadinessChecks([redisCheck(redis)]);
    expect(ready.ready).toBe(false);
    console.log(`Redis down: webhook answered 503 in ${ms} ms; /readyz: ${JSON.stringify(ready.checks[0])}`);

    // The same port again (the Service's address in a cluster): the clients reconnect on their own.
    server = await startRedis('', server.port);
    await waitFor(
      'the connections to reconnect',
      async () => queueConnection.status === 'ready' && redis.status === 'ready',
      20_000,
    );
    expect(await app.label(2)).toBe(200); // GitHub's redelivery
    expect((await queue.getJob('codertocat/hello-world#2@1'))?.data.issueNumber).toBe(2);
    expect((await runReadinessChecks([redisCheck(redis)])).ready).toBe(true);
  }, 60_000);

  test('an app started while Redis is down answers 503, then serves webhooks once Redis comes up', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const conns = [
      createRedisConnection(url, { purpose: 'enqueue' }),
      createRedisConnection(url, { purpose: 'enqueue' }),
    ];
    for (const c of conns) c.on('error', () => undefined);
    extraConnections.push(...conns);
    const lateQueue = createQueue(conns[0]!, { prefix: 'fn-outage-late' });
    lateQueue.on('error', () => undefined);
    extra.push(lateQueue);
    const late = await startOutageApp(lateQueue, conns[1]!, conns);
    extra.push(late);
    nockGitHubForLabels();
    expect(await late.label(4)).toBe(503);
    await startRedis('', port);
    await waitFor('the connections', async () => conns.every((c) => c.status === 'ready'), 20_000);
    expect(await late.label(4)).toBe(200);
    expect((await lateQueue.getJob('codertocat/hello-world#4@1'))?.data.issueNumber).toBe(4);
  }, 60_000);
});
