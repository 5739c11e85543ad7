import { describe, expect, test } from '@jest/globals';
import { useQueueRedis } from '../support/queueRedis.js';
import { sampleFollowUp as request } from '../support/tenantJobs.js';
import { parseBotBranch } from '../../src/github/botBranch.js';
import { currentAttempt } from '../../src/queue/attempts.js';
import { enqueueFollowUp, pullRequestKey } from '../../src/queue/followUps.js';
import { JobDataSchema, jobIdFor } from '../../src/queue/schema.js';

const q = useQueueRedis('followups');

describe('follow-up jobs', () => {
  test("are numbered per pull request and keyed by the PR's number, so cancel/status on the PR find them", async () => {
    const first = await enqueueFollowUp(q.queue, q.redis, request());
    expect(first).toMatchObject({ kind: 'queued', round: 1, created: true });
    if (first.kind !== 'queued') throw new Error('unreachable');
    expect(first.job.id).toBe('octo-org/hello.world#12@1');
    expect(first.job.id).toBe(jobIdFor({ ...pullRequestKey('Octo-Org', 'Hello.World', 12), attempt: 1 }));
    expect(JobDataSchema.parse(first.job.data).followUp).toMatchObject({ round: 1, pullNumber: 12 });
    expect(await currentAttempt(q.redis, pullRequestKey('Octo-Org', 'Hello.World', 12))).toBe(1);
    // The issue's own attempts are untouched.
    expect(await currentAttempt(q.redis, { owner: 'Octo-Org', repo: 'Hello.World', issueNumber: 7 })).toBeNull();
  });

  test('one round at a time: a second request while one waits waits for the next round, without a second job', async () => {
    const again = await enqueueFollowUp(q.queue, q.redis, request({ feedback: '/frognano and another thing' }));
    expect(again).toMatchObject({ kind: 'waiting', round: 1, added: { kind: 'added', count: 1 } });
    expect(await q.queue.count()).toBe(1);
  });

  test('the next round gets the next number once the previous one is gone', async () => {
    await (await q.queue.getJob('octo-org/hello.world#12@1'))!.remove();
    const next = await enqueueFollowUp(q.queue, q.redis, request());
    // The ask that waited for round 1 (whose runner never took it) is merged in, oldest first.
    expect(next).toMatchObject({ kind: 'queued', round: 2, asks: 2 });
  });

  test('refuses a payload the schema rejects (no sha), leaving the counter usable', async () => {
    await expect(enqueueFollowUp(q.queue, q.redis, request({ pullNumber: 13, headSha: 'main' }))).rejects.toThrow(
      /not a commit sha/,
    );
    expect(await enqueueFollowUp(q.queue, q.redis, request({ pullNumber: 13 }))).toMatchObject({
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
