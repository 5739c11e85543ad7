import { describe, expect, test } from '@jest/globals';
import nock from 'nock';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE_NAME, JobDataSchema, MAX_ISSUE_BODY_CHARS } from '../../src/queue/schema.js';
import { STATUS_MARKER } from '../../src/github/statusComment.js';
import { CANCEL_CHANNEL, isCancelRequested } from '../../src/queue/cancel.js';
import {
  API,
  INSTALLATION_ID,
  REDIS_URL,
  commentPayload,
  useAppHarness,
  example,
  labeledPayload,
  nockPermission,
  receive,
} from './helpers.js';
import { waitFor } from '../support/waitFor.js';

const REPO = '/repos/Codertocat/Hello-World';
const JOB1 = 'codertocat/hello-world#1@1';
const STATUS_ID = 9001;

const h = useAppHarness('app', { strict: true });

/** Records bodies POSTed/PATCHed to GitHub. */
function recorder() {
  const bodies: { method: string; path: string; body: any }[] = [];
  return {
    bodies,
    match: (method: string) => (body: any) => {
      bodies.push({ method, path: '', body });
      return true;
    },
  };
}

/** Expect the first-status-comment dance: look for an existing marker, then create it. */
function nockNewStatusComment(rec: ReturnType<typeof recorder>) {
  nock(API).get(`${REPO}/issues/1/comments`).query({ per_page: '100', page: '1' }).reply(200, []);
  nock(API)
    .post(`${REPO}/issues/1/comments`, rec.match('create-status'))
    .reply(201, { id: STATUS_ID, html_url: 'https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001' });
}

function nockEditStatus(rec: ReturnType<typeof recorder>) {
  nock(API)
    .patch(`${REPO}/issues/comments/${STATUS_ID}`, rec.match('edit-status'))
    .reply(200, { id: STATUS_ID, html_url: 'https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001' });
}

function nockEyes(commentId: number) {
  return nock(API)
    .post(`${REPO}/issues/comments/${commentId}/reactions`, { content: 'eyes' })
    .reply(201, { id: 1, content: 'eyes' });
}

/** A real pull request object (from the pull_request.opened example) as frognano opens them. */
function botPullRequest(): any {
  const pr = example('pull_request', 'opened').pull_request;
  pr.user = { ...pr.user, login: 'frognano[bot]', type: 'Bot' };
  pr.head = { ...pr.head, ref: 'frognano/issue-1', repo: { ...pr.base.repo } };
  return pr;
}

function nockPullRequest(n: number, pr: any) {
  nock(API).get(`${REPO}/pulls/${n}`).reply(200, pr);
}

function nockReply(rec: ReturnType<typeof recorder>) {
  nock(API).post(`${REPO}/issues/1/comments`, rec.match('reply')).reply(201, { id: 777 });
}

async function labelAsWriter() {
  const rec = recorder();
  nockPermission('Codertocat', 'write');
  nockNewStatusComment(rec);
  await receive(h.probot, 'issues', labeledPayload());
  return rec;
}

/** Takes the next job like a runner does (moves it to active under a lock). */
async function takeJob(): Promise<{ worker: { close(force?: boolean): Promise<void> }; token: string; job: any }> {
  const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const w = new Worker(QUEUE_NAME, null, { connection: conn, prefix: (h.queue.opts as any).prefix, autorun: false });
  const token = 'test-runner-token';
  const job = await w.getNextJob(token);
  if (!job) throw new Error('no job to take');
  // A worker does not close a connection it was handed.
  const worker = {
    close: async (force?: boolean) => {
      await w.close(force);
      await conn.quit();
    },
  };
  return { worker, token, job };
}

describe('issues.labeled', () => {
  test('a writer adding the label enqueues one validated job and creates the status comment', async () => {
    const rec = await labelAsWriter();
    const job = await h.queue.getJob(JOB1);
    expect(job).toBeDefined();
    expect(await job!.getState()).toBe('waiting');
    const data = JobDataSchema.parse(job!.data);
    expect(data).toMatchObject({
      installationId: INSTALLATION_ID,
      owner: 'Codertocat',
      repo: 'Hello-World',
      issueNumber: 1,
      title: 'Spelling error in the README file',
      body: "It looks like you accidently spelled 'commit' with two 't's.",
      defaultBranch: 'master',
      triggeredBy: { login: 'Codertocat', id: 21031067 },
      attempt: 1,
      trigger: 'label',
    });
    expect(await h.queue.count()).toBe(1);
    expect(rec.bodies).toHaveLength(1);
    const status = rec.bodies[0]!.body.body as string;
    expect(status.startsWith(STATUS_MARKER)).toBe(true);
    expect(status).toContain('frognano: queued');
    expect(status).toContain('**1st** in line');
    expect(status).toContain('started by @Codertocat');
    expect(status).toContain(`job \`${JOB1}\``);
    expect(await h.redis.get('frognano:attempt:codertocat/hello-world#1')).toBe('1');
  });

  test('the label name comes from configuration and matches case-insensitively', async () => {
    nockPermission('Codertocat', 'admin');
    nockNewStatusComment(recorder());
    await receive(h.probot, 'issues', labeledPayload({ label: 'FrogNano' }));
    expect(await h.queue.getJob(JOB1)).toBeDefined();
  });

  test('any other label does nothing', async () => {
    await receive(h.probot, 'issues', labeledPayload({ label: 'bug' }));
    expect(await h.queue.count()).toBe(0);
  });

  test('a label on a closed issue does nothing', async () => {
    await receive(h.probot, 'issues', labeledPayload({ state: 'closed' }));
    expect(await h.queue.count()).toBe(0);
  });

  test('a label on a pull request does nothing', async () => {
    const p = labeledPayload();
    p.issue.pull_request = { url: `${API}${REPO}/pulls/1` };
    await receive(h.probot, 'issues', p);
    expect(await h.queue.count()).toBe(0);
  });

  test('a redelivered label webhook creates no second job and no second comment', async () => {
    const payload = labeledPayload();
    await labelAsWriter();
    nockPermission('Codertocat', 'write');
    await receive(h.probot, 'issues', payload, 'same-delivery');
    nockPermission('Codertocat', 'write');
    await receive(h.probot, 'issues', payload, 'same-delivery');
    expect(await h.queue.count()).toBe(1);
    expect((await h.queue.getJobs(['waiting'])).map((j) => j.id)).toEqual([JOB1]);
  });

  test('labelling again after the attempt finished does not re-run it', async () => {
    await labelAsWriter();
    const { worker, token, job } = await takeJob();
    await job.moveToCompleted(
      { outcome: 'no_patch', exitReason: 'finished', turns: 3, elapsedSeconds: 12 },
      token,
      false,
    );
    await worker.close();
    nockPermission('Codertocat', 'write');
    await receive(h.probot, 'issues', labeledPayload());
    expect(await h.queue.getJob('codertocat/hello-world#1@2')).toBeUndefined();
    expect(await (await h.queue.getJob(JOB1))!.getState()).toBe('completed');
  });

  test('labelling again after a queued attempt was cancelled does not re-queue it', async () => {
    await labelAsWriter();
    nockEyes(30);
    nockPermission('Codertocat', 'write');
    nockEditStatus(recorder());
    await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 30 }));
    expect(await h.queue.getJob(JOB1)).toBeUndefined();
    nockPermission('Codertocat', 'write');
    await receive(h.probot, 'issues', labeledPayload());
    expect(await h.queue.getJob(JOB1)).toBeUndefined();
    expect(await h.queue.count()).toBe(0);
  });

  test('a GitHub error writing the status comment does not lose the queued job', async () => {
    nockPermission('Codertocat', 'write');
    nock(API).get(`${REPO}/issues/1/comments`).query(true).reply(200, []);
    nock(API).post(`${REPO}/issues/1/comments`).reply(500, { message: 'Server Error' });
    await expect(receive(h.probot, 'issues', labeledPayload())).resolves.not.toThrow();
    expect(await (await h.queue.getJob(JOB1))!.getState()).toBe('waiting');
  });

  test('a triage user adding the label gets a polite refusal, once per issue, whatever the delivery', async () => {
    const rec = recorder();
    nockPermission('triager', 'read', 'triage');
    nock(API).post(`${REPO}/issues/1/comments`, rec.match('refusal')).reply(201, { id: 5 });
    await receive(h.probot, 'issues', labeledPayload({ sender: 'triager' }), 'd-1');
    nockPermission('triager', 'read', 'triage');
    await receive(h.probot, 'issues', labeledPayload({ sender: 'triager' }), 'd-1');
    nockPermission('triager', 'read', 'triage');
    await receive(h.probot, 'issues', labeledPayload({ sender: 'triager' }), 'd-2');
    expect(await h.queue.count()).toBe(0);
    expect(rec.bodies).toHaveLength(1);
    expect(rec.bodies[0]!.body.body).toBe(
      '@triager, thanks for the interest! Adding the `frognano` label starts a model run, so it needs write, maintain or admin access to this repository, and you have the triage role. A maintainer can start the run by commenting `/frognano retry` here.',
    );
  });

  test('a huge issue body is clamped, not rejected', async () => {
    const p = labeledPayload();
    p.issue.body = 'x'.repeat(MAX_ISSUE_BODY_CHARS + 5000);
    nockPermission('Codertocat', 'write');
    nockNewStatusComment(recorder());
    await receive(h.probot, 'issues', p);
    const job = await h.queue.getJob(JOB1);
    expect(job!.data.body.length).toBeLessThan(MAX_ISSUE_BODY_CHARS + 200);
    expect(job!.data.body).toContain('[issue body truncated: 5000 more characters]');
  });

  test('a labeled payload missing fields is logged and ignored, not thrown', async () => {
    const p = labeledPayload();
    delete p.repository;
    delete p.issue.number;
    await expect(receive(h.probot, 'issues', p)).resolves.not.toThrow();
    const noInstallation = labeledPayload();
    delete noInstallation.installation;
    await expect(receive(h.probot, 'issues', noInstallation)).resolves.not.toThrow();
    expect(await h.queue.count()).toBe(0);
  });
});

describe('issue_comment.created commands', () => {
  test('/frognano retry from a non-collaborator is refused politely, without a reaction', async () => {
    const rec = recorder();
    nock(API).get(`${REPO}/collaborators/stranger/permission`).reply(404, { message: 'Not Found' });
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano retry', { commentId: 11, user: 'stranger' }));
    expect(await h.queue.count()).toBe(0);
    expect(rec.bodies.map((b) => b.body.body)).toEqual([
      '@stranger, thanks for the interest! frognano commands start or stop model runs, so they need write, maintain or admin access to this repository, and you have no write access. A maintainer can start the run by commenting `/frognano retry` here.',
    ]);
  });

  test('outsiders are answered at most once per issue, however many of them and however often; never with a reaction', async () => {
    const rec = recorder();
    nock(API).get(`${REPO}/collaborators/stranger/permission`).reply(404, { message: 'Not Found' });
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano retry', { commentId: 31, user: 'stranger' }));
    // Later comments: only the permission lookup; no reaction, no reply (nock refuses any other call).
    for (const [id, user] of [
      [32, 'stranger'],
      [33, 'another'],
      [34, 'stranger'],
    ] as const) {
      nock(API).get(`${REPO}/collaborators/${user}/permission`).reply(404, { message: 'Not Found' });
      await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: id, user }));
    }
    expect(rec.bodies).toHaveLength(1);
    // The mark is kept (no expiry) with the issue's other keys.
    expect(await h.redis.ttl('frognano:outsider-answered:codertocat/hello-world#1')).toBe(-1);
    // Another issue gets its own (single) answer.
    nock(API).get(`${REPO}/collaborators/stranger/permission`).reply(404, { message: 'Not Found' });
    nock(API).post(`${REPO}/issues/2/comments`, rec.match('reply-2')).reply(201, { id: 778 });
    await receive(
      h.probot,
      'issue_comment',
      commentPayload('/frognano retry', { commentId: 35, user: 'stranger', issueNumber: 2 }),
    );
    expect(rec.bodies).toHaveLength(2);
  });

  test('a failed refusal comment is not counted as the answer: the redelivery answers', async () => {
    nock(API).get(`${REPO}/collaborators/stranger/permission`).reply(404, { message: 'Not Found' });
    nock(API).post(`${REPO}/issues/1/comments`).reply(502, { message: 'Bad gateway' });
    const p = commentPayload('/frognano retry', { commentId: 36, user: 'stranger' });
    await expect(receive(h.probot, 'issue_comment', p, 'flaky-outsider')).rejects.toThrow();
    const rec = recorder();
    nock(API).get(`${REPO}/collaborators/stranger/permission`).reply(404, { message: 'Not Found' });
    nockReply(rec);
    await receive(h.probot, 'issue_comment', p, 'flaky-outsider');
    expect(rec.bodies).toHaveLength(1);
  });

  test('comments by bots (including this app) are ignored', async () => {
    await receive(
      h.probot,
      'issue_comment',
      commentPayload('/frognano retry', { user: 'frognano[bot]', userType: 'Bot' }),
    );
    expect(await h.queue.count()).toBe(0);
  });

  test('comments without a command, or quoting one, are ignored', async () => {
    await receive(h.probot, 'issue_comment', commentPayload('thanks! I will try `/frognano retry` later'));
    await receive(h.probot, 'issue_comment', commentPayload('> /frognano retry\n\nwhy did you do that?'));
    await receive(h.probot, 'issue_comment', commentPayload('```\n/frognano cancel\n```'));
    expect(await h.queue.count()).toBe(0);
  });

  test('an edited comment triggers nothing', async () => {
    const p = commentPayload('/frognano retry');
    p.action = 'edited';
    p.changes = { body: { from: 'x' } };
    await receive(h.probot, 'issue_comment', p);
    expect(await h.queue.count()).toBe(0);
  });

  test('an unknown command gets the help text', async () => {
    const rec = recorder();
    nockEyes(12);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano dance', { commentId: 12 }));
    const body = rec.bodies[0]!.body.body as string;
    expect(body).toContain("I don't know the command `/frognano dance`");
    expect(body).toContain('| `/frognano retry` |');
    expect(body).toContain('| `/frognano cancel` |');
    expect(body).toContain('| `/frognano status` |');
    expect(body).toContain('add the `frognano` label');
  });

  test('/frognano status refreshes the status comment and answers with the state', async () => {
    await labelAsWriter();
    const rec = recorder();
    nockEyes(13);
    nockPermission('Codertocat', 'maintain');
    nockEditStatus(rec);
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: 13 }));
    expect(rec.bodies.map((b) => b.method)).toEqual(['edit-status', 'reply']);
    expect(rec.bodies[0]!.body.body).toContain('frognano: queued');
    expect(rec.bodies[1]!.body.body).toBe(
      '@Codertocat Attempt 1: queued (1st in line). Details are in the [status comment](https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001).',
    );
  });

  test('/frognano status before any run says how to start', async () => {
    const rec = recorder();
    nockEyes(14);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: 14 }));
    expect(rec.bodies[0]!.body.body).toBe(
      '@Codertocat frognano has not run on this issue yet. Add the `frognano` label to start.',
    );
  });

  test('/frognano cancel removes a waiting job and marks the status cancelled', async () => {
    await labelAsWriter();
    const rec = recorder();
    nockEyes(15);
    nockPermission('Codertocat', 'write');
    nockEditStatus(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 15 }));
    expect(await h.queue.getJob(JOB1)).toBeUndefined();
    // One message: the status comment (no reply saying the same again).
    expect(rec.bodies).toHaveLength(1);
    expect(rec.bodies[0]!.body.body).toContain('frognano: cancelled');
    expect(rec.bodies[0]!.body.body).toContain('Cancelled by @Codertocat');
  });

  test('/frognano cancel with nothing to cancel says so', async () => {
    const rec = recorder();
    nockEyes(25);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 25 }));
    expect(rec.bodies[0]!.body.body).toBe('There is nothing to cancel: frognano has not run on this issue.');

    await labelAsWriter();
    const { worker, token, job } = await takeJob();
    await job.moveToCompleted(
      { outcome: 'no_patch', reason: 'No test reproduces it.', exitReason: 'finished', turns: 5, elapsedSeconds: 30 },
      token,
      false,
    );
    await worker.close();
    const rec2 = recorder();
    nockEyes(26);
    nockPermission('Codertocat', 'write');
    nockReply(rec2);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 26 }));
    expect(rec2.bodies[0]!.body.body).toBe(
      'There is nothing to cancel: attempt 1 has already ended (finished without proposing a change).',
    );
    expect(await isCancelRequested(h.redis, JOB1)).toBe(false);
  });

  test('/frognano cancel on a running job signals the runner over Redis', async () => {
    await labelAsWriter();
    const { worker } = await takeJob();
    const sub = new Redis(REDIS_URL);
    const heard: string[] = [];
    await sub.subscribe(CANCEL_CHANNEL);
    sub.on('message', (_c, m) => heard.push(m));
    try {
      const rec = recorder();
      nockEyes(16);
      nockPermission('Codertocat', 'admin');
      nockEditStatus(rec);
      await receive(h.probot, 'issue_comment', commentPayload('/frognano cancel', { commentId: 16 }));
      expect(await isCancelRequested(h.redis, JOB1)).toBe(true);
      expect(await (await h.queue.getJob(JOB1))!.getState()).toBe('active');
      expect(rec.bodies).toHaveLength(1);
      expect(rec.bodies[0]!.body.body).toContain('Cancellation requested by @Codertocat');
      await waitFor('the cancel message on the channel', () => heard.length > 0, 5000);
      expect(heard.map((m) => JSON.parse(m))).toEqual([expect.objectContaining({ jobId: JOB1, by: 'Codertocat' })]);
    } finally {
      await sub.quit();
      await worker.close(true);
    }
  });

  test('/frognano retry while the attempt is running says so instead of starting another', async () => {
    await labelAsWriter();
    const { worker } = await takeJob();
    try {
      const rec = recorder();
      nockEyes(17);
      nockPermission('Codertocat', 'write');
      nockReply(rec); // no status edit: a running job's comment belongs to the runner
      await receive(h.probot, 'issue_comment', commentPayload('/frognano retry', { commentId: 17 }));
      expect(await h.queue.getJob('codertocat/hello-world#1@2')).toBeUndefined();
      expect(await h.queue.count()).toBe(0); // the only job is active
      expect(rec.bodies.map((b) => b.method)).toEqual(['reply']);
      expect(rec.bodies[0]!.body.body).toBe(
        'Attempt 1 is still running ([status](https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001)), so I did not start another. Comment `/frognano cancel` first if you want to start over.',
      );
    } finally {
      await worker.close(true);
    }
  });

  test("/frognano status after a pull request leaves the runner's comment alone and answers with the result", async () => {
    await labelAsWriter();
    const { worker, token, job } = await takeJob();
    await job.moveToCompleted(
      {
        outcome: 'pull_request',
        pullRequestUrl: 'https://github.com/Codertocat/Hello-World/pull/2',
        pullRequestNumber: 2,
        exitReason: 'finished',
        turns: 9,
        elapsedSeconds: 80,
      },
      token,
      false,
    );
    await worker.close();
    const rec = recorder();
    nockEyes(23);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: 23 }));
    expect(rec.bodies.map((b) => b.method)).toEqual(['reply']);
    expect(rec.bodies[0]!.body.body).toBe(
      '@Codertocat Attempt 1: draft pull request #2 opened. Details are in the [status comment](https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001).',
    );
  });

  test('/frognano status after a runner crash writes the failure into the status comment', async () => {
    await labelAsWriter();
    const { worker, token, job } = await takeJob();
    await job.moveToFailed(new Error('job stalled more than allowable limit'), token, false);
    await worker.close();
    const rec = recorder();
    nockEyes(24);
    nockPermission('Codertocat', 'write');
    nockEditStatus(rec);
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano status', { commentId: 24 }));
    expect(rec.bodies[0]!.body.body).toContain('### ❌ frognano: failed');
    // BullMQ's own wording is replaced by one a maintainer can act on.
    expect(rec.bodies[0]!.body.body).toContain('The runner stopped responding repeatedly while working on this issue');
    expect(rec.bodies[0]!.body.body).not.toContain('allowable limit');
    expect(rec.bodies[1]!.body.body).toBe(
      '@Codertocat Attempt 1: stopped with an error. Details are in the [status comment](https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001).',
    );
  });

  test('/frognano retry while the attempt is queued does not queue a second one', async () => {
    await labelAsWriter();
    const rec = recorder();
    nockEyes(18);
    nockPermission('Codertocat', 'write');
    nockEditStatus(rec);
    nockReply(rec);
    await receive(h.probot, 'issue_comment', commentPayload('/frognano retry', { commentId: 18 }));
    expect(await h.queue.count()).toBe(1);
    expect(rec.bodies[1]!.body.body).toContain('Attempt 1 is still queued (1st in line)');
  });

  test('/frognano retry after a failure starts attempt 2; a redelivery of that comment does nothing', async () => {
    await labelAsWriter();
    const { worker, token, job } = await takeJob();
    await job.moveToFailed(new Error('sandbox image frognano-sandbox:1 not found'), token, false);
    await worker.close();

    const rec = recorder();
    nockEyes(19);
    nockPermission('Codertocat', 'write');
    nockEditStatus(rec);
    nockReply(rec);
    const payload = commentPayload('/frognano retry', { commentId: 19 });
    await receive(h.probot, 'issue_comment', payload, 'retry-delivery');
    await receive(h.probot, 'issue_comment', payload, 'retry-delivery');

    const job2 = await h.queue.getJob('codertocat/hello-world#1@2');
    expect(job2).toBeDefined();
    expect(job2!.data).toMatchObject({ attempt: 2, trigger: 'comment', commentId: 19, deliveryId: 'retry-delivery' });
    expect(await h.queue.getJob('codertocat/hello-world#1@3')).toBeUndefined();
    expect(rec.bodies[0]!.body.body).toContain('frognano: queued (attempt 2)');
    expect(rec.bodies[1]!.body.body).toBe(
      'Queued attempt 2. Progress is tracked in the [status comment](https://github.com/Codertocat/Hello-World/issues/1#issuecomment-9001).',
    );
    expect(await h.redis.get('frognano:attempt:codertocat/hello-world#1')).toBe('2');
  });

  test('/frognano retry on a closed issue asks to reopen it', async () => {
    const rec = recorder();
    nockEyes(20);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    const p = commentPayload('/frognano retry', { commentId: 20 });
    p.issue.state = 'closed';
    await receive(h.probot, 'issue_comment', p);
    expect(await h.queue.count()).toBe(0);
    expect(rec.bodies[0]!.body.body).toContain('This issue is closed');
  });

  test('/frognano status on a pull request frognano opened answers for its follow-up rounds', async () => {
    const rec = recorder();
    nockPullRequest(1, botPullRequest());
    nockPermission('Codertocat', 'write');
    nockEyes(21);
    nockReply(rec);
    const p = commentPayload('/frognano status', { commentId: 21 });
    p.issue.pull_request = { url: `${API}${REPO}/pulls/1` };
    await receive(h.probot, 'issue_comment', p);
    expect(rec.bodies[0]!.body.body).toBe(
      '@Codertocat No follow-up round has run on this pull request yet. Comment `/frognano <what to change>`, or submit a review that contains `/frognano`, to start one.',
    );
  });

  test.each([
    ['a person', (pr: any) => Object.assign(pr, { user: { ...pr.user, login: 'Codertocat', type: 'User' } })],
    ['another branch', (pr: any) => Object.assign(pr, { head: { ...pr.head, ref: 'feature/x' } })],
    [
      'a fork',
      (pr: any) =>
        Object.assign(pr, { head: { ...pr.head, repo: { ...pr.head.repo, full_name: 'someone/Hello-World' } } }),
    ],
  ])(
    '/frognano on a pull request opened by %s is ignored: no permission lookup, reaction or reply',
    async (_what, change) => {
      nockPullRequest(1, change(botPullRequest()));
      const p = commentPayload('/frognano retry', { commentId: 22, user: 'stranger' });
      p.issue.pull_request = { url: `${API}${REPO}/pulls/1` };
      await receive(h.probot, 'issue_comment', p);
      expect(await h.queue.count()).toBe(0);
    },
  );

  test('a comment payload missing fields is ignored without throwing', async () => {
    const p = commentPayload('/frognano retry');
    delete p.comment;
    await expect(receive(h.probot, 'issue_comment', p)).resolves.not.toThrow();
  });

  test('a GitHub error while handling releases the comment so a redelivery can try again', async () => {
    nock(API).get(`${REPO}/collaborators/Codertocat/permission`).reply(502, { message: 'Bad gateway' });
    const p = commentPayload('/frognano help', { commentId: 22 });
    await expect(receive(h.probot, 'issue_comment', p, 'flaky')).rejects.toThrow();
    const rec = recorder();
    nockEyes(22);
    nockPermission('Codertocat', 'write');
    nockReply(rec);
    await receive(h.probot, 'issue_comment', p, 'flaky');
    expect(rec.bodies[0]!.body.body).toContain('Here is what I understand');
  });
});
