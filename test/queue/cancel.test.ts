import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { waitFor } from '../support/waitFor.js';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  cancelKey,
  clearCancel,
  getCancelRequest,
  isCancelRequested,
  onCancel,
  requestCancel,
  type CancelRequest,
} from '../../src/queue/cancel.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let redis: Redis;
let sub: Redis;
const ids: string[] = [];
const jobId = () => {
  const id = `test-cancel/${randomUUID()}#1@1`;
  ids.push(id);
  return id;
};

beforeAll(() => {
  redis = new Redis(REDIS_URL);
  sub = new Redis(REDIS_URL);
});
afterAll(async () => {
  if (ids.length) await redis.del(...ids.map(cancelKey));
  await Promise.all([redis.quit(), sub.quit()]);
});

describe('cancel signal', () => {
  test('requestCancel leaves a key runners can check, with who asked', async () => {
    const id = jobId();
    expect(await isCancelRequested(redis, id)).toBe(false);
    await requestCancel(redis, id, 'octocat');
    expect(await isCancelRequested(redis, id)).toBe(true);
    expect(await getCancelRequest(redis, id)).toMatchObject({ jobId: id, by: 'octocat' });
    expect(await redis.ttl(cancelKey(id))).toBeGreaterThan(0);
    await clearCancel(redis, id);
    expect(await isCancelRequested(redis, id)).toBe(false);
  });

  test('onCancel fires once for its own job only, and stops when told', async () => {
    const mine = jobId();
    const other = jobId();
    const heard: CancelRequest[] = [];
    const stop = onCancel(sub, mine, (r) => heard.push(r));
    // Give the SUBSCRIBE a moment to reach Redis.
    await new Promise((r) => setTimeout(r, 100));
    await requestCancel(redis, other, 'x');
    await requestCancel(redis, mine, 'octocat');
    await requestCancel(redis, mine, 'again');
    expect(
      await waitFor('the cancel request to be heard', () => heard.length > 0, { timeoutMs: 2000, everyMs: 10 }),
    ).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(heard).toEqual([expect.objectContaining({ jobId: mine, by: 'octocat' })]);
    await stop();
    expect(sub.listenerCount('message')).toBe(0);
  });

  test('a request made before the runner listened is still delivered (via the key)', async () => {
    const id = jobId();
    await requestCancel(redis, id, 'early');
    const heard: CancelRequest[] = [];
    const listener = new Redis(REDIS_URL);
    const stop = onCancel(listener, id, (r) => heard.push(r), { checker: redis });
    expect(
      await waitFor('one cancel request to be heard', () => heard.length === 1, { timeoutMs: 2000, everyMs: 10 }),
    ).toBe(true);
    expect(heard[0]!.by).toBe('early');
    await stop();
    await listener.quit();
  });
});
