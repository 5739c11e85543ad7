import { describe, expect, test } from '@jest/globals';
import nock from 'nock';
import { guidanceFrom, isGuidanceRequest } from '../../src/app/guidance.js';
import { pullRequestCommand } from '../../src/app/followUp.js';
import { parseCommand } from '../../src/app/commands.js';
import { JobDataSchema, jobIdFor } from '../../src/queue/schema.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { startWaitingRound, pullRequestKey } from '../../src/queue/followUps.js';
import { admitRun } from '../../src/queue/quotas/check.js';
import type { QuotasConfig } from '../../src/queue/quotas/schema.js';
import { API, commentPayload, useAppHarness, example, nockPermission, receive } from './helpers.js';

const REPO = '/repos/Codertocat/Hello-World';
const PR = 12;
const HEAD = 'c'.repeat(40);
const ROUND1 = `codertocat/hello-world#${PR}@1`;

let quotas: QuotasConfig | null = null;
const h = useAppHarness('app-followup', {
  extra: () => ({ quotas: () => quotas }),
  reset: () => void (quotas = null),
  strict: true,
});

function botPullRequest(over: Record<string, unknown> = {}) {
  return {
    number: PR,
    state: 'open',
    html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}`,
    user: { login: 'frognano[bot]', type: 'Bot' },
    head: { ref: 'frognano/issue-1-attempt-2', sha: HEAD, repo: { full_name: 'Codertocat/Hello-World' } },
    base: { ref: 'master', repo: { full_name: 'Codertocat/Hello-World' } },
    ...over,
  };
}

/** issue_comment.created (the real example) on pull request #12. */
function prComment(body: string, o: { commentId?: number; user?: string } = {}) {
  const p = commentPayload(body, { issueNumber: PR, commentId: o.commentId ?? 31, user: o.user });
  p.issue.pull_request = {
    url: `${API}${REPO}/pulls/${PR}`,
    html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}`,
  };
  return p;
}

/** What the app asks GitHub when a writer asks for a round: the PR, the original issue, then the queued status on the PR. */
/** What a queued round reads and writes: the issue, then the status comment on the pull request (none yet). */
function nockQueuedStatus() {
  nock(API)
    .get(`${REPO}/issues/1`)
    .reply(200, { number: 1, title: 'T', body: 'B' })
    .get(`${REPO}/issues/${PR}/comments`)
    .query(true)
    .reply(200, [])
    .post(`${REPO}/issues/${PR}/comments`)
    .reply(201, { id: 4001 });
}

/** An ask (comment `commentId`) while a round is queued: the reaction, the PR, the issue, the reply it gets. */
function nockAskWhileQueued(commentId: number, replies: string[], replyId: number) {
  nock(API)
    .post(`${REPO}/issues/comments/${commentId}/reactions`)
    .reply(201, {})
    .get(`${REPO}/pulls/${PR}`)
    .reply(200, botPullRequest())
    .get(`${REPO}/issues/1`)
    .reply(200, { number: 1, title: 'T', body: 'B' })
    .post(`${REPO}/issues/${PR}/comments`, (b) => (replies.push(b.body), true))
    .reply(201, { id: replyId });
}

function nockRoundRequest(bodies: string[], pr = botPullRequest()) {
  nock(API)
    .post(`${REPO}/issues/comments/31/reactions`)
    .reply(201, {})
    .get(`${REPO}/pulls/${PR}`)
    .reply(200, pr)
    .get(`${REPO}/issues/1`)
    .reply(200, { number: 1, title: 'Spelling error in the README file', body: 'comitt -> commit' })
    .get(`${REPO}/issues/${PR}/comments`)
    .query(true)
    .reply(200, [])
    .post(`${REPO}/issues/${PR}/comments`, (b) => (bodies.push(b.body), true))
    .reply(201, { id: 4001, html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}#issuecomment-4001` });
}

describe('/frognano on the bot pull request (issue_comment.created)', () => {
  test("a writer's request queues round 1 of the PR, continuing its branch, and says 'queued' on the PR first", async () => {
    nockPermission('Codertocat', 'write');
    const bodies: string[] = [];
    nockRoundRequest(bodies);
    await receive(h.probot, 'issue_comment', prComment('/frognano use "commit" in the title too'));

    const job = await h.queue.getJob(ROUND1);
    expect(await job?.getState()).toBe('waiting');
    const data = JobDataSchema.parse(job!.data);
    expect(data).toMatchObject({
      issueNumber: 1,
      attempt: 2,
      title: 'Spelling error in the README file',
      trigger: 'comment',
      triggeredBy: { login: 'Codertocat' },
      commentId: 31,
      followUp: {
        pullNumber: PR,
        headBranch: 'frognano/issue-1-attempt-2',
        headSha: HEAD,
        baseBranch: 'master',
        round: 1,
        feedback: 'use "commit" in the title too',
        source: 'comment',
      },
    });
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toContain('frognano: round 1 queued');
    expect(bodies[0]).toContain(`job \`${ROUND1}\``);
  });

  test('a second request while the round waits is kept for the next round: 👀 and "queued after round 1", no second job', async () => {
    nockPermission('Codertocat', 'write');
    nockRoundRequest([]);
    await receive(h.probot, 'issue_comment', prComment('/frognano rename it please'));
    nockPermission('Codertocat', 'write');
    const replies: string[] = [];
    nockAskWhileQueued(32, replies, 4002);
    await receive(h.probot, 'issue_comment', prComment('/frognano and another thing', { commentId: 32 }));
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatch(/^Queued after round 1: /);
    expect(replies[0]).not.toMatch(/did not start/);
    expect(await h.queue.count()).toBe(1);
  });

  test('asks that wait are charged when their round starts, once for the merged round', async () => {
    quotas = parseQuotasFile('repositories:\n  codertocat/hello-world: { runsPerHour: 2 }\n', 'q.yaml');
    nockPermission('Codertocat', 'write');
    nockRoundRequest([]);
    await receive(h.probot, 'issue_comment', prComment('/frognano rename it please'));
    expect(await h.queue.getJob(ROUND1)).toBeDefined(); // round 1 took one of the hour's two runs
    // Three asks while round 1 waits: each only looks at the quota (one run left), none takes it.
    const replies: string[] = [];
    for (const commentId of [41, 42, 43]) {
      nockPermission('Codertocat', 'write');
      nockAskWhileQueued(commentId, replies, 5000 + commentId);
      await receive(h.probot, 'issue_comment', prComment(`/frognano ask number ${commentId}`, { commentId }));
    }
    expect(replies).toHaveLength(3);
    for (const r of replies) expect(r).toMatch(/^Queued after round 1: /);
    // Round 1 ends: the three asks start round 2, admitted once (as the runner does, src/runner/nextRound.ts).
    const key = pullRequestKey('Codertocat', 'Hello-World', PR);
    const admit = (round: number) =>
      admitRun(
        h.redis,
        quotas!,
        { installation: 'codertocat', repository: 'codertocat/hello-world' },
        {
          jobId: jobIdFor({ ...key, attempt: round }),
          jobKeyPrefix: h.queue.toKey(''),
        },
      );
    const next = await startWaitingRound(h.queue, h.redis, key, 1, undefined, undefined, admit);
    expect(next).toMatchObject({ kind: 'queued', round: 2, asks: 3 });
    // The hour's two runs are now spent: rounds 1 and 2, not one per ask.
    expect(await admit(3)).toMatchObject({ quota: 'runsPerHour', used: 2, limit: 2 });
  });

  test('/frognano cancel on the PR withdraws its queued round, and the PR status comment says so', async () => {
    nockPermission('Codertocat', 'write');
    const bodies: string[] = [];
    nockRoundRequest(bodies);
    await receive(h.probot, 'issue_comment', prComment('/frognano rename it please'));
    nockPermission('Codertocat', 'write');
    const edits: string[] = [];
    nock(API)
      .get(`${REPO}/pulls/${PR}`)
      .reply(200, botPullRequest())
      .post(`${REPO}/issues/comments/33/reactions`)
      .reply(201, {})
      .patch(`${REPO}/issues/comments/4001`, (b) => (edits.push(b.body), true))
      .reply(200, { id: 4001 });
    await receive(h.probot, 'issue_comment', prComment('/frognano cancel', { commentId: 33 }));
    expect(await h.queue.getJob(ROUND1)).toBeUndefined();
    expect(edits[0]).toContain('cancelled');
  });

  test('a pull request that is not the bot’s gets no round and no answer', async () => {
    nock(API)
      .get(`${REPO}/pulls/${PR}`)
      .reply(200, botPullRequest({ user: { login: 'someone', type: 'User' } }));
    await receive(h.probot, 'issue_comment', prComment('/frognano fix it'));
    expect(await h.queue.count()).toBe(0);
  });

  test('a closed bot pull request gets a reply and no round', async () => {
    nockPermission('Codertocat', 'write');
    const replies: string[] = [];
    nock(API)
      .get(`${REPO}/pulls/${PR}`)
      .reply(200, botPullRequest({ state: 'closed' }))
      .post(`${REPO}/issues/comments/31/reactions`)
      .reply(201, {})
      .post(`${REPO}/issues/${PR}/comments`, (b) => (replies.push(b.body), true))
      .reply(201, { id: 5 });
    await receive(h.probot, 'issue_comment', prComment('/frognano fix it'));
    expect(replies).toEqual(['I did not start a follow-up round: the pull request is closed.']);
    expect(await h.queue.count()).toBe(0);
  });

  test('someone without write access is refused once and nothing is queued', async () => {
    nockPermission('stranger', 'read');
    nock(API)
      .get(`${REPO}/pulls/${PR}`)
      .reply(200, botPullRequest())
      .post(`${REPO}/issues/${PR}/comments`)
      .reply(201, { id: 6 });
    await receive(h.probot, 'issue_comment', prComment('/frognano delete the tests', { user: 'stranger' }));
    expect(await h.queue.count()).toBe(0);
  });
});

describe('pull_request_review.submitted with /frognano', () => {
  function review(o: { id?: number; body: string | null; user?: string; state?: string }) {
    const p = example('pull_request_review', 'submitted', (x) => !!x.installation);
    p.installation = { id: 4242 };
    p.review = {
      ...p.review,
      id: o.id ?? 77,
      body: o.body,
      state: o.state ?? 'commented',
      user: { ...p.review.user, login: o.user ?? 'Codertocat', type: 'User' },
    };
    p.pull_request = { ...p.pull_request, ...botPullRequest() };
    return p;
  }
  const inline = [
    {
      body: 'Use a constant here.',
      path: 'src/a.ts',
      line: 4,
      original_line: 4,
      diff_hunk: '@@ -1,4 +1,4 @@\n+x',
      user: { login: 'Codertocat', type: 'User' },
    },
  ];

  test('queues a round carrying the review text and its inline comments with file, line and hunk; a redelivery does nothing', async () => {
    nockPermission('Codertocat', 'admin');
    nock(API).get(`${REPO}/pulls/${PR}/reviews/77/comments`).query(true).reply(200, inline);
    nockQueuedStatus();
    const payload = review({ body: 'Please address these.\n\n/frognano' });
    await receive(h.probot, 'pull_request_review', payload, 'delivery-1');
    await receive(h.probot, 'pull_request_review', payload, 'delivery-2'); // GitHub redelivers
    const data = JobDataSchema.parse((await h.queue.getJob(ROUND1))!.data);
    expect(data.trigger).toBe('review');
    expect(data.followUp).toMatchObject({
      source: 'review',
      reviewId: 77,
      feedback: 'Please address these.\n\n/frognano',
      inlineComments: [
        {
          author: 'Codertocat',
          body: 'Use a constant here.',
          path: 'src/a.ts',
          line: 4,
          diffHunk: '@@ -1,4 +1,4 @@\n+x',
        },
      ],
    });
    expect(await h.queue.count()).toBe(1);
  });

  test('a single-comment review whose inline comment says /frognano counts too', async () => {
    nockPermission('Codertocat', 'write');
    nock(API)
      .get(`${REPO}/pulls/${PR}/reviews/78/comments`)
      .query(true) // fetched once: to find the command, then reused for the job
      .reply(200, [{ ...inline[0], body: '/frognano use a constant here' }]);
    nockQueuedStatus();
    await receive(h.probot, 'pull_request_review', review({ id: 78, body: null }));
    expect(await h.queue.getJob(ROUND1)).toBeDefined();
  });

  test('a review without /frognano, or by someone without write access, queues nothing', async () => {
    nock(API).get(`${REPO}/pulls/${PR}/reviews/79/comments`).query(true).reply(200, inline);
    await receive(h.probot, 'pull_request_review', review({ id: 79, body: 'Looks fine.' }));
    nockPermission('stranger', 'read');
    await receive(
      h.probot,
      'pull_request_review',
      review({ id: 80, body: '/frognano rewrite it all', user: 'stranger' }),
    );
    expect(await h.queue.count()).toBe(0);
  });
});

describe('guidance on the issue', () => {
  test("`/frognano <guidance>` with no attempt running starts one that carries the writer's words", async () => {
    nockPermission('Codertocat', 'write');
    nock(API)
      .post(`${REPO}/issues/comments/41/reactions`)
      .reply(201, {})
      .get(`${REPO}/issues/1/comments`)
      .query(true)
      .reply(200, [])
      .post(`${REPO}/issues/1/comments`)
      .times(2) // the status comment, then the reply
      .reply(201, { id: 9001 });
    await receive(
      h.probot,
      'issue_comment',
      commentPayload('/frognano keep the public API stable\nand add a test', { commentId: 41 }),
    );
    const data = JobDataSchema.parse((await h.queue.getJob('codertocat/hello-world#1@1'))!.data);
    expect(data).toMatchObject({
      attempt: 1,
      trigger: 'comment',
      guidance: 'keep the public API stable\nand add a test',
    });
  });
});

describe('guidance and commands on pull requests (parsing)', () => {
  test.each([
    ['/frognano retry use the v2 API', 'use the v2 API'],
    ['/frognano retry\nKeep the old name.\nAnd add a test.', 'Keep the old name.\nAnd add a test.'],
    ['/frognano retry', ''],
    ['Thanks.\n\n/frognano please keep the public API', 'please keep the public API'],
    ['> /frognano retry quoted words\n\n/frognano retry the real ones', 'the real ones'],
  ])('guidanceFrom(%j)', (body, expected) => {
    expect(guidanceFrom(body)).toBe(expected);
  });

  test('`/frognano <two or more words>` on an issue is guidance; one unknown word stays a typo', () => {
    const is = (body: string) => isGuidanceRequest(parseCommand(body)!, body);
    expect(is('/frognano keep the old name')).toBe(true);
    expect(is('/frognano stauts')).toBe(false);
    expect(is('/frognano status')).toBe(false);
  });

  test.each([
    ['/frognano status', 'status'],
    ['/frognano cancel', 'cancel'],
    ['/frognano', 'help'],
    ['/frognano help', 'help'],
    ['/frognano retry', 'followUp'],
    ['/frognano rename it', 'followUp'],
    ['/frognano\nRename `foo` to `bar`.', 'followUp'],
  ])('pullRequestCommand(%j) is %s', (body, kind) => {
    expect(pullRequestCommand(body)?.kind).toBe(kind);
  });
});
