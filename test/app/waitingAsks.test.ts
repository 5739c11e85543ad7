import { describe, expect, test } from '@jest/globals';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import nock from 'nock';
import { createFrognanoApp } from '../../src/app/index.js';
import { readWaitingAsks } from '../../src/queue/asks.js';
import { pullRequestKey } from '../../src/queue/followUps.js';
import { createQueue } from '../../src/queue/queue.js';
import { QUEUE_NAME } from '../../src/queue/schema.js';
import {
  API,
  botPullRequestSlice,
  commentOnPullRequest,
  useAppHarness,
  nockPermission,
  receive,
  REDIS_URL,
  reviewOnPullRequest,
  testProbot,
} from './helpers.js';

/**
 * Asks on the bot's pull request while a round runs (src/queue/asks.ts): they wait instead of being refused, are
 * answered once, survive an app restart, are listed by `/frognano status` and dropped by `/frognano cancel`.
 */
const REPO = '/repos/Codertocat/Hello-World';
const PR = 12;
const HEAD = 'c'.repeat(40);
const KEY = pullRequestKey('Codertocat', 'Hello-World', PR);

let runnerConn: Redis;
let runner: Worker;
const closers: (() => Promise<unknown>)[] = [];
const h = useAppHarness('app-asks', {
  resetEach: false, // the scenario's steps build on each other
  setUp: (harness) => {
    runnerConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    runner = new Worker(QUEUE_NAME, null, {
      connection: runnerConn,
      prefix: harness.queue.opts.prefix,
      autorun: false,
    });
  },
  tearDown: async () => {
    for (const close of closers) await close();
    await runner.close(true);
    await runnerConn.quit();
  },
  strict: true,
});

const botPullRequest = botPullRequestSlice({
  number: PR,
  head: 'frognano/issue-1-attempt-2',
  sha: HEAD,
  base: 'master',
});

function prComment(body: string, commentId: number, user = 'Codertocat') {
  return commentOnPullRequest(body, { pullNumber: PR, commentId, user });
}

function review(id: number, body: string, user: string) {
  return reviewOnPullRequest({ id, body, user, pr: botPullRequest });
}

/** A writer's command comment on the PR: permission, 👀, the PR; `replies` collects what the app posts. */
function nockCommand(commentId: number, replies: string[], o: { issue?: boolean } = {}) {
  nockPermission('Codertocat', 'write');
  const scope = nock(API)
    .post(`${REPO}/issues/comments/${commentId}/reactions`)
    .reply(201, {})
    .get(`${REPO}/pulls/${PR}`)
    .reply(200, botPullRequest);
  if (o.issue) scope.get(`${REPO}/issues/1`).reply(200, { number: 1, title: 'Spelling', body: 'comitt -> commit' });
  scope
    .post(`${REPO}/issues/${PR}/comments`, (b) => (replies.push(b.body), true))
    .reply(201, { id: 5000 + replies.length });
}

describe('asks while round 1 of the pull request runs', () => {
  test('round 1 is queued by the first ask and taken by a runner', async () => {
    const status: string[] = [];
    nockPermission('Codertocat', 'write');
    nock(API)
      .post(`${REPO}/issues/comments/31/reactions`)
      .reply(201, {})
      .get(`${REPO}/pulls/${PR}`)
      .reply(200, botPullRequest)
      .get(`${REPO}/issues/1`)
      .reply(200, { number: 1, title: 'Spelling', body: 'comitt -> commit' })
      .get(`${REPO}/issues/${PR}/comments`)
      .query(true)
      .reply(200, [])
      .post(`${REPO}/issues/${PR}/comments`, (b) => (status.push(b.body), true))
      .reply(201, { id: 4001, html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}#issuecomment-4001` });
    await receive(h.probot, 'issue_comment', prComment('/frognano fix the title too', 31));
    expect(status[0]).toContain('frognano: round 1 queued');
    const job = await runner.getNextJob('runner-token');
    expect(job?.id).toBe(`codertocat/hello-world#${PR}@1`);
  });

  test('a second ask gets 👀 and "queued after round 1", not a refusal; its redelivery does nothing', async () => {
    const replies: string[] = [];
    nockCommand(32, replies, { issue: true });
    const payload = prComment('/frognano also rename the helper', 32);
    await receive(h.probot, 'issue_comment', payload);
    await receive(h.probot, 'issue_comment', payload); // GitHub redelivers: no calls, no second ask
    expect(replies).toEqual([expect.stringMatching(/^Queued after round 1: your ask runs in the next round/)]);
    expect(await h.queue.getJobCounts('waiting', 'active')).toEqual({ waiting: 0, active: 1 });
    expect((await readWaitingAsks(h.redis, KEY)).map((a) => a.commentId)).toEqual([32]);
  });

  test('a review with /frognano waits too, after the comment', async () => {
    const replies: string[] = [];
    nockPermission('hubot', 'write');
    nock(API)
      .get(`${REPO}/issues/1`)
      .reply(200, { number: 1, title: 'Spelling', body: 'comitt -> commit' })
      .get(`${REPO}/pulls/${PR}/reviews/77/comments`)
      .query(true)
      .reply(200, [
        {
          body: 'Use a constant.',
          path: 'src/a.ts',
          line: 4,
          original_line: 4,
          diff_hunk: '@@ -1 +1 @@\n+x',
          user: { login: 'hubot', type: 'User' },
        },
      ])
      .post(`${REPO}/issues/${PR}/comments`, (b) => (replies.push(b.body), true))
      .reply(201, { id: 5100 });
    await receive(h.probot, 'pull_request_review', review(77, 'Two things.\n\n/frognano', 'hubot'));
    expect(replies).toEqual([
      expect.stringContaining(
        'Queued after round 1: your ask runs in the next round when round 1 ends, with 1 other ask that waits too',
      ),
    ]);
    const waiting = await readWaitingAsks(h.redis, KEY);
    expect(waiting.map((a) => [a.triggeredBy.login, a.followUp.source])).toEqual([
      ['Codertocat', 'comment'],
      ['hubot', 'review'],
    ]);
    expect(waiting[1]!.followUp.inlineComments[0]).toMatchObject({
      path: 'src/a.ts',
      line: 4,
      diffHunk: '@@ -1 +1 @@\n+x',
    });
  });

  test('after an app restart (a new app instance on the same Redis), /frognano status lists the waiting asks', async () => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null, keyPrefix: h.keyPrefix });
    const queueConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = createQueue(queueConn, { prefix: h.queue.opts.prefix });
    closers.push(
      () => queue.close(),
      () => redis.quit(),
      () => queueConn.quit(),
    );
    const probot = testProbot();
    await probot.load(createFrognanoApp({ queue, redis }));
    const replies: string[] = [];
    nockCommand(33, replies);
    await receive(probot, 'issue_comment', prComment('/frognano status', 33));
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatch(/^@Codertocat Round 1: running/);
    expect(replies[0]).toContain('Waiting for the next round (2, oldest first, merged into one round):');
    expect(replies[0]).toMatch(/1\. a comment by `Codertocat` .*\n2\. a review by `hubot` /);
  });

  test('/frognano cancel stops round 1 and drops the waiting asks, and says both', async () => {
    const replies: string[] = [];
    const edits: string[] = [];
    nockCommand(34, replies);
    nock(API)
      .patch(`${REPO}/issues/comments/4001`, (b) => (edits.push(b.body), true))
      .reply(200, { id: 4001 });
    await receive(h.probot, 'issue_comment', prComment('/frognano cancel', 34));
    expect(replies).toEqual([
      'Dropped 2 asks that waited for the next round (from @Codertocat, @hubot); no round will start for them.',
    ]);
    expect(edits[0]).toContain('Cancellation requested by @Codertocat');
    expect(await readWaitingAsks(h.redis, KEY)).toEqual([]);
  });
});
