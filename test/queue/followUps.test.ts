import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { parseBotBranch } from '../../src/github/botBranch.js';
import { currentAttempt } from '../../src/queue/attempts.js';
import { enqueueFollowUp, pullRequestKey, type FollowUpRequest } from '../../src/queue/followUps.js';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';
import { JobDataSchema, jobIdFor } from '../../src/queue/schema.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ns = `fn-test-followups-${randomUUID().slice(0, 8)}`;
let conn: Redis;
let redis: Redis;
let queue: FrognanoQueue;

function request(over: Partial<FollowUpRequest['followUp']> = {}): FollowUpRequest {
  return {
    installationId: 1,
    owner: 'Octo-Org',
    repo: 'Hello.World',
    issueNumber: 7,
    title: 'Fix the thing',
    body: 'It is broken.',
    defaultBranch: 'main',
    triggeredBy: { login: 'octocat', id: 1 },
    attempt: 1,
    trigger: 'review',
    deliveryId: randomUUID(),
    enqueuedAt: new Date().toISOString(),
    followUp: {
      pullNumber: 12,
      headBranch: 'frognano/issue-7',
      headSha: 'a'.repeat(40),
      baseBranch: 'main',
      feedback: '/frognano please rename it',
      inlineComments: [],
      omittedComments: 0,
      source: 'review',
      ...over,
    },
  };
}

beforeAll(() => {
  conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  redis = new Redis(REDIS_URL, { keyPrefix: `${ns}:` });
  queue = createQueue(conn, { prefix: `${ns}-bull` });
});
afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
  const keys = await conn.keys(`${ns}*`);
  if (keys.length) await conn.del(...keys);
  await Promise.all([conn.quit(), redis.quit()]);
});

describe('follow-up jobs', () => {
  test("are numbered per pull request and keyed by the PR's number, so cancel/status on the PR find them", async () => {
    const first = await enqueueFollowUp(queue, redis, request());
    expect(first).toMatchObject({ kind: 'queued', round: 1, created: true });
    if (first.kind !== 'queued') throw new Error('unreachable');
    expect(first.job.id).toBe('octo-org/hello.world#12@1');
    expect(first.job.id).toBe(jobIdFor({ ...pullRequestKey('Octo-Org', 'Hello.World', 12), attempt: 1 }));
    expect(JobDataSchema.parse(first.job.data).followUp).toMatchObject({ round: 1, pullNumber: 12 });
    expect(await currentAttempt(redis, pullRequestKey('Octo-Org', 'Hello.World', 12))).toBe(1);
    // The issue's own attempts are untouched.
    expect(await currentAttempt(redis, { owner: 'Octo-Org', repo: 'Hello.World', issueNumber: 7 })).toBeNull();
  });

  test('one round at a time: a second request while one waits waits for the next round, without a second job', async () => {
    const again = await enqueueFollowUp(queue, redis, request({ feedback: '/frognano and another thing' }));
    expect(again).toMatchObject({ kind: 'waiting', round: 1, added: { kind: 'added', count: 1 } });
    expect(await queue.count()).toBe(1);
  });

  test('the next round gets the next number once the previous one is gone', async () => {
    await (await queue.getJob('octo-org/hello.world#12@1'))!.remove();
    const next = await enqueueFollowUp(queue, redis, request());
    // The ask that waited for round 1 (whose runner never took it) is merged in, oldest first.
    expect(next).toMatchObject({ kind: 'queued', round: 2, asks: 2 });
  });

  test('refuses a payload the schema rejects (no sha), leaving the counter usable', async () => {
    await expect(enqueueFollowUp(queue, redis, request({ pullNumber: 13, headSha: 'main' }))).rejects.toThrow(
      /not a commit sha/,
    );
    expect(await enqueueFollowUp(queue, redis, request({ pullNumber: 13 }))).toMatchObject({
      kind: 'queued',
      round: 1,
    });
  });
});

describe('parseBotBranch', () => {
  test.each([
    ['frognano/issue-7', { issueNumber: 7, attempt: 1 }],
    ['frognano/issue-12-attempt-3', { issueNumber: 12, attempt: 3 }],
    ['frognano/issue-12-partial', null],
    ['frognano/issue-0', null],
    ['feature/issue-7', null],
    ['frognano/issue-7-attempt-1', null],
  ])('%s', (ref, expected) => {
    expect(parseBotBranch(ref)).toEqual(expected);
  });
});
