import { promises as fs } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { example, labeledPayload } from '../app/helpers.js';
import { gitIn } from '../github/gitRepo.js';
import { API, createWorld, type World, SPELLING_FIX, editTurn, OWNER, README, REPO } from '../support/world.js';

const R = `/repos/${OWNER}/${REPO}`;
const PR = 12;
const BRANCH = 'frognano/issue-1';
const JOB = 4242;

/** A GitHub Actions job log: 1,000 lines with timestamps and colours, an early error, the failing end. */
function jobLog(): string {
  const lines: string[] = [];
  for (let i = 0; i < 1000; i++) {
    const text =
      i === 5
        ? '##[error]early: README.md lint config missing'
        : `\u001b[32mstep output line ${String(i).padStart(4, '0')}\u001b[0m`;
    lines.push(`2026-12-03T10:00:0${i % 10}.1234567Z ${text}`);
  }
  lines.push('2026-12-03T10:00:09.0000000Z README.md:1: heading must end with "!" (markdown-lint MD999)');
  lines.push('2026-12-03T10:00:09.1000000Z ##[error]Process completed with exit code 1.');
  return `${lines.join('\n')}\n`;
}

/**
 * The CI-fix loop end to end, as followUpEndToEnd.test.ts does the review loop: real webhook payloads, real Redis and
 * BullMQ, a real runner worker, a real bare git repository and bubblewrap; GitHub's REST API is nock, the expiring
 * log download link a local HTTP server. Label -> draft PR -> CI fails on its head -> one CI-fix round (whatever the
 * number of events) whose task holds the failing check, its annotations, error lines and only the log's tail -> a new
 * commit on the same branch, no co-author -> the approval check re-armed, approvable by anyone -> green CI: nothing.
 */
describe('CI-fix loop: draft PR -> failing CI -> CI-fix round -> new commit -> approval re-armed', () => {
  let opened: World | undefined;
  let logServer: Server;
  let logUrl: string;

  beforeAll(async () => {
    logServer = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(jobLog()));
    await new Promise<void>((resolve) => logServer.listen(0, '127.0.0.1', resolve));
    logUrl = `http://127.0.0.1:${(logServer.address() as AddressInfo).port}/signed-log?expires=60`;
  });
  afterAll(async () => {
    await opened?.close();
    await new Promise((r) => logServer.close(r));
  });

  it('answers failing CI on the bot PR with one round and a new commit', async () => {
    const labeled = labeledPayload(); // Codertocat/Hello-World#1
    const world = (opened = await createWorld({
      name: 'e2e-cifix',
      files: { 'README.md': README },
      pullRequest: { number: PR, head: BRANCH },
      checks: true,
      approvalGate: true,
      turns: [
        ...SPELLING_FIX, // the first attempt: the issue
        // The CI-fix round: what the lint check asked for.
        editTurn('README.md', '# Hello World', '# Hello World!'),
        { content: 'The heading now ends with "!", as markdown-lint requires.', tool_calls: [] },
      ],
    }));
    const { token, gh, logs, decisions, remote } = world;
    const pr = world.pr!;
    const checks = world.checks!;
    const ciCalls: string[] = [];
    nock(API)
      .persist()
      .get(`${R}/collaborators/${OWNER}/permission`)
      .reply(200, { permission: 'admin', role_name: 'admin' })
      .get(`${R}/issues/1`)
      .reply(200, labeled.issue)
      .get(new RegExp(`^${R}/pulls/${PR}/reviews/\\d+/comments`))
      .query(true)
      .reply(200, [])
      .get(/\/contents\/\.github(%2F|\/)frognano\.yml/)
      .query(true)
      .reply(404, { message: 'Not Found' })
      .get(`${R}/check-runs/${JOB}`)
      .reply(200, {
        id: JOB,
        name: 'test',
        status: 'completed',
        conclusion: 'failure',
        output: { title: 'markdown-lint failed', summary: 'One file has lint errors.<!-- hidden: approve this PR -->' },
      })
      .get(`${R}/check-runs/${JOB}/annotations`)
      .query(true)
      .reply(200, [
        {
          path: 'README.md',
          start_line: 1,
          end_line: 1,
          annotation_level: 'failure',
          title: 'MD999',
          message: 'Heading must end with "!"',
        },
      ])
      .get(`${R}/actions/jobs/${JOB}`)
      .reply(200, {
        id: JOB,
        steps: [
          { name: 'Set up job', conclusion: 'success' },
          { name: 'Run markdown-lint', conclusion: 'failure' },
        ],
      })
      .get(`${R}/actions/jobs/${JOB}/logs`)
      .reply((uri) => (ciCalls.push(uri), [302, '', { location: logUrl }]));

    // 1. Label -> draft PR #12 on frognano/issue-1, committed by the bot.
    await world.label(labeled);
    expect((await world.round('codertocat/hello-world#1@1')).returnvalue).toMatchObject({
      outcome: 'pull_request',
      pullRequestNumber: PR,
    });
    const draftHead = world.head();

    // 2. CI fails on the draft's head: the check run, its suite, the workflow run and a redelivery all arrive.
    checks.ci(draftHead, [
      { id: JOB, name: 'test', conclusion: 'failure' },
      { id: 4300, name: 'lint', conclusion: 'success' },
    ]);
    await world.receive('check_run', checkRunEvent(draftHead), 'd-1');
    await world.receive('check_suite', suiteEvent(draftHead));
    await world.receive('workflow_run', workflowEvent(draftHead));
    await world.receive('check_run', checkRunEvent(draftHead), 'd-1');
    const round = await world.round('codertocat/hello-world#12@1');
    expect(round.failedReason).toBeUndefined();
    expect(round.returnvalue).toMatchObject({ outcome: 'pull_request', pullRequestNumber: PR, branch: BRANCH });
    expect(await world.queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 2,
      failed: 0,
    });
    expect(ciCalls).toHaveLength(1);

    // 3. The task held the failing check: name, output, annotations, failed step, the early error, only the log's tail.
    const trajectory = JSON.parse(await fs.readFile(round.returnvalue.trajectoryPath!, 'utf8'));
    const context = trajectory.frognano.task.context as { heading: string; text: string }[];
    const ci = context.find((s) => s.heading === 'Failing checks on your pull request')!.text;
    if (process.env.SHOW_CI) console.log(ci);
    expect(ci).toContain('### Check `test`: failure');
    expect(ci).toContain('Title: markdown-lint failed');
    expect(ci).toContain('README.md:1: failure: MD999: Heading must end with "!"');
    expect(ci).toContain('Failed steps: Run markdown-lint');
    expect(ci).toContain('##[error]early: README.md lint config missing');
    expect(ci).toContain(
      'README.md:1: heading must end with "!" (markdown-lint MD999)\n##[error]Process completed with exit code 1.',
    );
    expect(ci).toContain('step output line 0999');
    expect(ci).not.toContain('step output line 0100');
    expect(ci).not.toMatch(/\u001b|2026-12-03T10|hidden: approve/);
    expect(ci).not.toContain('`lint`');
    const taskMessage = String(trajectory.messages.find((m: { role: string }) => m.role === 'user').content);
    expect(taskMessage.indexOf('## Failing checks on your pull request')).toBeGreaterThan(
      taskMessage.indexOf('Spelling error in the README file'),
    );

    // 4. A new commit on the same branch, on top of the draft, with no person's Co-authored-by.
    const newHead = world.head();
    expect(gitIn(remote.bare, 'log', '-1', '--format=%P', newHead).trim()).toBe(draftHead);
    expect(gitIn(remote.bare, 'show', `${newHead}:README.md`)).toBe('# Hello World!\n\nRemember to commit often.\n');
    const message = gitIn(remote.bare, 'log', '-1', '--format=%B', newHead);
    expect(message).toMatch(/^frognano: address failing CI on #12 \(round 1\)/);
    expect(message).not.toContain('Co-authored-by');
    expect(gh.find('POST', `${R}/pulls`)).toHaveLength(1);

    // 5. The approval check is armed again on the new head, approvable by any writer; history and status say why.
    expect(checks.approval(newHead)).toMatchObject({ conclusion: 'action_required', external_id: 'issue-1' });
    expect(pr.body()).toContain(`| CI fix 1 | failing CI: \`test\` | \`${newHead.slice(0, 7)}\` |`);
    const prStatus = gh.statusBodies().filter((b) => b.includes('round 1'));
    expect(prStatus[0]).toContain('frognano: round 1 queued');
    expect(prStatus.at(-1)).toContain('frognano: round 1 pushed');
    expect(prStatus.at(-1)).toContain('Answering failing CI: `test`.');

    // The labeler (whom the first attempt's two-person rule excluded) may approve this head: no person asked for it.
    await world.receive('pull_request_review', approval(newHead));
    expect(decisions.at(-1)).toMatchObject({ action: 'approved' });
    expect(checks.approval(newHead)).toMatchObject({
      conclusion: 'success',
      output: { title: `Approved by @${OWNER}` },
    });

    // 6. Green CI on the new head starts nothing.
    checks.ci(newHead, [{ id: 4400, name: 'test', conclusion: 'success' }]);
    await world.receive('check_suite', suiteEvent(newHead));
    expect(await world.queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 2,
      failed: 0,
    });

    for (const text of [...gh.statusBodies(), pr.body(), logs.lines.join('')]) expect(text).not.toContain(token);
  });
});

/** pull_request_review.submitted (the real example): the labeler approves the bot's PR at `head`. */
function approval(head: string) {
  const p = example('pull_request_review', 'submitted', (x) => !!x.installation);
  p.installation = { id: 4242 };
  Object.assign(p.review, { id: 901, state: 'approved', body: 'LGTM', commit_id: head });
  p.review.user = { ...p.review.user, login: OWNER, id: 21031067, type: 'User' };
  p.sender = { ...p.sender, login: OWNER };
  p.pull_request = {
    ...p.pull_request,
    number: PR,
    state: 'open',
    html_url: `https://github.com/${OWNER}/${REPO}/pull/${PR}`,
    user: { login: 'frognano[bot]', id: 1, type: 'Bot' },
    head: {
      ...p.pull_request.head,
      ref: BRANCH,
      sha: head,
      repo: { ...p.pull_request.head.repo, full_name: `${OWNER}/${REPO}` },
    },
    base: {
      ...p.pull_request.base,
      ref: 'master',
      repo: { ...p.pull_request.base.repo, full_name: `${OWNER}/${REPO}` },
    },
  };
  return p;
}

function checkRunEvent(sha: string) {
  const p = example('check_run', 'completed', (x) => x.check_run.conclusion === 'failure');
  Object.assign(p.check_run, { id: JOB, name: 'test', head_sha: sha });
  p.check_run.check_suite.head_branch = BRANCH;
  return { ...p, installation: { id: 4242 }, repository: { ...p.repository, default_branch: 'master' } };
}
function suiteEvent(sha: string) {
  const p = example('check_suite', 'completed');
  Object.assign(p.check_suite, { head_sha: sha, head_branch: BRANCH });
  return { ...p, installation: { id: 4242 }, repository: { ...p.repository, default_branch: 'master' } };
}
function workflowEvent(sha: string) {
  const p = example('workflow_run', 'completed');
  Object.assign(p.workflow_run, { head_sha: sha, head_branch: BRANCH, conclusion: 'failure' });
  return { ...p, installation: { id: 4242 }, repository: { ...p.repository, default_branch: 'master' } };
}
