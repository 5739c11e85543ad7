import { describe, expect, test } from '@jest/globals';
import { useQueueRedis, REDIS_URL } from '../support/queueRedis.js';
import { sampleFollowUp } from '../support/tenantJobs.js';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { readWaitingAsks } from '../../src/queue/asks.js';
import { enqueueFollowUp, pullRequestKey, startWaitingRound, type FollowUpRequest } from '../../src/queue/followUps.js';
import { JobDataSchema } from '../../src/queue/schema.js';

const q = useQueueRedis('asks');
const PR = pullRequestKey('Octo-Org', 'Hello.World', 12);

function ask(o: {
  login: string;
  commentId?: number;
  reviewId?: number;
  feedback: string;
  head?: string;
  at?: string;
}): FollowUpRequest {
  return sampleFollowUp(
    {
      headSha: (o.head ?? 'a').repeat(40),
      feedback: o.feedback,
      inlineComments: o.reviewId
        ? [{ author: o.login, body: 'here', path: 'src/a.ts', line: 3, diffHunk: '@@ -1,3 +1,3 @@\n-a\n+b' }]
        : [],
      source: o.reviewId ? 'review' : 'comment',
      ...(o.reviewId ? { reviewId: o.reviewId } : {}),
    },
    {
      triggeredBy: { login: o.login, id: o.login.length },
      trigger: o.reviewId ? 'review' : 'comment',
      ...(o.commentId ? { commentId: o.commentId } : {}),
      enqueuedAt: o.at ?? new Date().toISOString(),
    },
  );
}

describe('asks that arrive while a round is queued or running', () => {
  const second = ask({
    login: 'alice',
    commentId: 102,
    feedback: 'also rename the helper',
    at: '2026-01-01T10:00:00.000Z',
  });
  const third = ask({ login: 'bob', reviewId: 9, feedback: 'see inline', head: 'b', at: '2026-01-01T10:05:00.000Z' });

  test('wait for the next round, once each (a redelivery adds nothing)', async () => {
    expect(
      await enqueueFollowUp(q.queue, q.redis, ask({ login: 'octocat', commentId: 101, feedback: 'fix it' })),
    ).toMatchObject({ kind: 'queued', round: 1 });
    expect(await enqueueFollowUp(q.queue, q.redis, second)).toMatchObject({
      kind: 'waiting',
      round: 1,
      added: { kind: 'added', count: 1 },
    });
    expect(await enqueueFollowUp(q.queue, q.redis, third)).toMatchObject({
      kind: 'waiting',
      round: 1,
      added: { kind: 'added', count: 2 },
    });
    const redelivered = { ...second, deliveryId: randomUUID() };
    expect(await enqueueFollowUp(q.queue, q.redis, redelivered)).toMatchObject({
      kind: 'waiting',
      added: { kind: 'duplicate', count: 2 },
    });
    expect(await q.queue.count()).toBe(1);
  });

  test('are kept in Redis: a new app instance (new connections, same Redis) sees them', async () => {
    const redis2 = new Redis(REDIS_URL, { keyPrefix: `${q.ns}:` });
    try {
      const waiting = await readWaitingAsks(redis2, PR);
      expect(waiting.map((w) => w.triggeredBy.login)).toEqual(['alice', 'bob']);
    } finally {
      await redis2.quit();
    }
  });

  test('become round 2 when round 1 ends, merged oldest first, exactly once', async () => {
    const announced: number[] = [];
    const next = await startWaitingRound(q.queue, q.redis, PR, 1, async (round) => void announced.push(round));
    expect(next).toMatchObject({ kind: 'queued', round: 2, asks: 2, created: true });
    expect(announced).toEqual([2]);
    const data = JobDataSchema.parse(next?.kind === 'queued' ? next.job.data : null);
    expect(data.triggeredBy.login).toBe('alice');
    expect(data.followUp).toMatchObject({
      round: 2,
      headSha: 'b'.repeat(40),
      feedback: 'also rename the helper',
      source: 'comment',
    });
    expect(data.followUp!.reviewId).toBeUndefined();
    expect(data.followUp!.asks).toEqual([
      expect.objectContaining({
        author: { login: 'alice', id: 5 },
        source: 'comment',
        commentId: 102,
        askedAt: '2026-01-01T10:00:00.000Z',
      }),
      expect.objectContaining({
        author: { login: 'bob', id: 3 },
        source: 'review',
        reviewId: 9,
        feedback: 'see inline',
      }),
    ]);
    expect(data.followUp!.asks![1]!.inlineComments[0]).toMatchObject({ path: 'src/a.ts', line: 3 });
    expect(await readWaitingAsks(q.redis, PR)).toEqual([]);
    // A second end of round 1 (a stalled-job report after the runner's own) does nothing.
    expect(await startWaitingRound(q.queue, q.redis, PR, 1)).toBeNull();
    expect(await q.queue.count()).toBe(2);
  });

  test('an ask after round 2 said it ended, while its job is still finishing, starts round 3 at once', async () => {
    expect(await startWaitingRound(q.queue, q.redis, PR, 2)).toBeNull(); // nothing waited
    const late = await enqueueFollowUp(q.queue, q.redis, ask({ login: 'carol', commentId: 103, feedback: 'one more' }));
    expect(late).toMatchObject({ kind: 'queued', round: 3, asks: 1 });
  });
});
