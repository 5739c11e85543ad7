import { describe, expect, test } from '@jest/globals';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { FairShare } from '../../src/queue/fairShare/dispatcher.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { FrognanoMetrics } from '../../src/ops/metrics.js';
import type { QuotasConfig } from '../../src/queue/quotas/schema.js';
import { recordRunnerSeconds } from '../../src/queue/quotas/store.js';
import { issueJob } from '../support/tenantJobs.js';
import { API, commentPayload, labeledPayload, nockPermission, receive, useAppHarness } from './helpers.js';

const REPO = '/repos/Codertocat/Hello-World';
const JOB1 = 'codertocat/hello-world#1@1';
let fair: FairShare;
let slots = 0;
let quotas: QuotasConfig | null = null;
const metrics = new FrognanoMetrics({ defaultMetrics: false });
const deleteFairShareKeys = async (raw: Redis) => {
  const keys = await raw.keys(`${fair.root}*`);
  if (keys.length) await raw.del(...keys);
};
const h = useAppHarness('fairshare', {
  extra: (queue, raw) => {
    fair = new FairShare(queue, raw, { slots: () => slots });
    return { fairShare: fair, quotas: () => quotas, metrics };
  },
  tearDown: (harness) => deleteFairShareKeys(harness.raw),
  reset: async (harness) => {
    await deleteFairShareKeys(harness.raw);
    slots = 0;
    quotas = null;
  },
  strict: true,
});

/** Records the bodies of comments created on issue `n`. */
function nockCreateComment(n: number, bodies: string[], id = 9001) {
  return nock(API)
    .post(`${REPO}/issues/${n}/comments`, (b: any) => (bodies.push(b.body), true))
    .reply(201, { id, html_url: `https://github.com/Codertocat/Hello-World/issues/${n}#issuecomment-${id}` });
}

describe('fair share in the app', () => {
  test('a labelled issue is held in line; its status comment shows its place in fair order', async () => {
    for (const [owner, repo, n] of [
      ['Zeta', 'x', 1],
      ['Zeta', 'x', 2],
      ['Codertocat', 'other', 1],
      ['Codertocat', 'other', 2],
    ] as const) {
      await fair.enqueue(issueJob(owner, repo, n));
    }
    await fair.kick(); // enqueue's own dispatch (no slots) has settled
    slots = 1;
    expect((await fair.dispatch()).map((m) => m.repository)).toEqual(['codertocat/other']);
    slots = 0;
    const bodies: string[] = [];
    nockPermission('Codertocat', 'write');
    nock(API).get(`${REPO}/issues/1/comments`).query(true).reply(200, []);
    nockCreateComment(1, bodies);
    await receive(h.probot, 'issues', labeledPayload());
    const job = await h.queue.getJob(JOB1);
    expect(await job!.getState()).toBe('delayed');
    // In line: the job already waiting, then Zeta (its installation's turn), then this one, ahead of codertocat/other.
    expect(bodies[0]).toContain('**3rd** in line');
    expect(await fair.position(JOB1)).toBe(3);
    slots = 10;
    const order = (await fair.dispatch()).map((m) => m.jobId);
    expect(order.indexOf(JOB1)).toBe(1);
  });

  test('/frognano status on a held job gives its place in fair order', async () => {
    await fair.enqueue(issueJob('Acme', 'x', 1));
    await fair.enqueue(issueJob('Acme', 'x', 2));
    nockPermission('Codertocat', 'write');
    nock(API).get(`${REPO}/issues/1/comments`).query(true).reply(200, []);
    nockCreateComment(1, []);
    await receive(h.probot, 'issues', labeledPayload());
    const replies: string[] = [];
    nockPermission('Codertocat', 'write');
    nock(API).post(`${REPO}/issues/comments/79/reactions`).reply(201, { id: 1 });
    nock(API).patch(`${REPO}/issues/comments/9001`).reply(200, { id: 9001 });
    nockCreateComment(1, replies, 9002);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: 79 }));
    // Acme and Codertocat alternate: Acme's first, then this one, ahead of Acme's second.
    expect(replies[0]).toContain('queued (2nd in line)');
  });

  test('/frognano cancel withdraws a job still held in line', async () => {
    nockPermission('Codertocat', 'write');
    nock(API).get(`${REPO}/issues/1/comments`).query(true).reply(200, []);
    nockCreateComment(1, []);
    await receive(h.probot, 'issues', labeledPayload());
    expect(await fair.backlog()).toBe(1);
    nockPermission('Codertocat', 'write');
    nock(API).post(`${REPO}/issues/comments/77/reactions`).reply(201, { id: 1 });
    nock(API).patch(`${REPO}/issues/comments/9001`).reply(200, { id: 9001 });
    await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 77 }));
    expect(await h.queue.getJob(JOB1)).toBeUndefined();
    expect(await fair.backlog()).toBe(0);
  });
});

describe('quotas in the app', () => {
  test('over quota: nothing is queued, one comment per thread and period names the quota', async () => {
    quotas = parseQuotasFile('repositories:\n  codertocat/hello-world: { runsPerHour: 1 }\n', 'q.yaml');
    nockPermission('Codertocat', 'write');
    nock(API).get(`${REPO}/issues/1/comments`).query(true).reply(200, []);
    nockCreateComment(1, []);
    await receive(h.probot, 'issues', labeledPayload());
    expect(await h.queue.getJob(JOB1)).toBeDefined();

    const refusals: string[] = [];
    nockPermission('Codertocat', 'write');
    nockCreateComment(2, refusals, 5);
    await receive(h.probot, 'issues', labeledPayload({ issueNumber: 2 }));
    expect(await h.queue.count()).toBe(1);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(
      /^Not queued: the repository `codertocat\/hello-world` has used its quota of runs per hour \(`runsPerHour`: 1 used of 1\)\. It resets at \d{4}-\d\d-\d\d \d\d:\d\d UTC/,
    );
    // A writer asks again on the same issue before the reset: answered by the same comment, not another one.
    nockPermission('Codertocat', 'write');
    nock(API).post(`${REPO}/issues/comments/78/reactions`).reply(201, { id: 1 });
    await receive(h.probot, 'issue_comment', commentPayload('/frognano retry', { issueNumber: 2, commentId: 78 }));
    expect(await h.queue.count()).toBe(1);
    expect(await h.redis.get('frognano:attempt:codertocat/hello-world#2')).toBeNull();
    const body = (await metrics.render()).body;
    expect(body).toContain('frognano_quota_refusals_total{installation="codertocat",quota="runsPerHour"} 2');
  });
});

describe('quotas hold under concurrency', () => {
  test('a tenant at 95% of its day labels ten issues at once: only the runs whose hold fits are queued', async () => {
    // 34,200 of 36,000 s used today; a run holds 1,800 s (the default) until it ends: room for exactly one.
    quotas = parseQuotasFile('defaults: { runnerSecondsPerDay: 36000 }\n', 'q.yaml');
    await recordRunnerSeconds(h.redis, { installation: 'codertocat', repository: 'codertocat/hello-world' }, 34_200);
    const issues = Array.from({ length: 10 }, (_, i) => i + 1);
    nockPermission('Codertocat', 'write').persist();
    const bodies = new Map<number, string[]>();
    for (const n of issues) {
      bodies.set(n, []);
      nock(API).persist().get(`${REPO}/issues/${n}/comments`).query(true).reply(200, []);
      nockCreateComment(n, bodies.get(n)!, 100 + n).persist();
    }
    await Promise.all(issues.map((n) => receive(h.probot, 'issues', labeledPayload({ issueNumber: n }))));

    expect(await h.queue.count()).toBe(1);
    const refusals = issues.flatMap((n) => bodies.get(n)!.filter((b) => b.startsWith('Not queued')));
    expect(refusals).toHaveLength(9);
    expect(refusals[0]).toMatch(
      /^Not queued: the installation `codertocat` has no room left in its quota of runner time per day \(`runnerSecondsPerDay`: 9\.5 h used and 30 min held by runs in progress, of 10\.0 h\)\. .* Ask again when a run has ended or after the reset/,
    );
    nock.cleanAll();
  });
});
