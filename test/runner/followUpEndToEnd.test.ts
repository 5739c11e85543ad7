import { promises as fs } from 'node:fs';
import nock from 'nock';
import { example, labeledPayload } from '../app/helpers.js';
import { gitIn } from '../github/gitRepo.js';
import { API, createWorld, type World, SPELLING_FIX, editTurn, OWNER, README, REPO } from '../support/world.js';
import { compareFiles } from './pullRequestRecorder.js';

const R = `/repos/${OWNER}/${REPO}`;
const PR = 12;
const BRANCH = 'frognano/issue-1';
const REVIEW_ID = 555;

/** The two inline comments of the review, as GitHub's REST API returns them. */
const INLINE = [
  {
    body: 'Greet properly: `# Hello, World!`',
    path: 'README.md',
    line: 1,
    original_line: 1,
    start_line: null,
    diff_hunk: '@@ -1,3 +1,3 @@\n # Hello World',
    user: { login: OWNER, type: 'User' },
  },
  {
    body: 'Say "commit and push often."',
    path: 'README.md',
    line: 3,
    original_line: 3,
    start_line: null,
    diff_hunk: '@@ -1,3 +1,3 @@\n # Hello World\n \n-Remember to comitt often.\n+Remember to commit often.',
    user: { login: OWNER, type: 'User' },
  },
];

/**
 * The review loop end to end, with real webhook payloads, real Redis and BullMQ, a real runner worker, a real
 * bare git repository and bubblewrap; only GitHub's REST API is nock. Label -> draft PR -> a review with two
 * inline comments and /frognano -> a follow-up commit on the same branch that addresses them -> the approval
 * check re-armed on the new head -> the reviewer who asked for it cannot approve it alone; a second writer can.
 */
describe('review loop: label -> draft PR -> review with /frognano -> follow-up commit -> approval', () => {
  let opened: World | undefined;
  afterAll(() => opened?.close());

  it('takes review feedback into a new commit and gates it on a second pair of eyes', async () => {
    const labeled = labeledPayload(); // Codertocat/Hello-World#1
    const world = (opened = await createWorld({
      name: 'e2e-followup',
      files: { 'README.md': README },
      pullRequest: { number: PR, head: BRANCH },
      checks: true,
      approvalGate: true,
      turns: [
        ...SPELLING_FIX, // the first attempt: the issue
        // The follow-up round: one edit per inline comment.
        { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] },
        editTurn('README.md', '# Hello World', '# Hello, World!'),
        editTurn('README.md', 'commit often.', 'commit and push often.'),
        { content: 'Addressed both review comments: the heading and the reminder.', tool_calls: [] },
      ],
    }));
    const { remote, token, gh, logs, decisions } = world;
    const pr = world.pr!;
    const checks = world.checks!;
    nock(API)
      .persist()
      .get(`${R}/collaborators/${OWNER}/permission`)
      .reply(200, { permission: 'admin', role_name: 'admin' })
      .get(`${R}/collaborators/hubot/permission`)
      .reply(200, { permission: 'write', role_name: 'write' })
      .get(`${R}/issues/1`)
      .reply(200, labeled.issue)
      .get(new RegExp(`^${R}/pulls/${PR}/reviews/\\d+/comments`))
      .query(true)
      .reply((uri) => [200, uri.includes(`/reviews/${REVIEW_ID}/`) ? INLINE : []]);

    // 1. Label -> draft PR #12 on frognano/issue-1.
    await world.label(labeled);
    const first = await world.round('codertocat/hello-world#1@1');
    expect(first.returnvalue).toMatchObject({ outcome: 'pull_request', pullRequestNumber: PR, branch: BRANCH });
    const draftHead = world.head();
    expect(checks.latest(draftHead)).toMatchObject({
      conclusion: 'action_required',
      external_id: 'issue-1;not-by=codertocat',
    });
    // The pull request GitHub keeps has the description the first attempt opened it with.
    const draftBody = String(gh.find('POST', `${R}/pulls`)[0]!.body.body);
    expect(draftBody).toContain('## Files changed (1, +1 −1)');
    pr.setBody(draftBody);

    // 2. A review with two inline comments and /frognano in its text, on the draft's head.
    await world.review(
      reviewPayload({
        id: REVIEW_ID,
        state: 'commented',
        body: 'Two things, see inline.\n\n/frognano',
        user: OWNER,
        head: draftHead,
      }),
    );
    const round = await world.round('codertocat/hello-world#12@1');
    expect(round.failedReason).toBeUndefined();
    expect(round.returnvalue).toMatchObject({ outcome: 'pull_request', pullRequestNumber: PR, branch: BRANCH });

    // 3. A new commit on the same branch, on top of the draft, that does what the two comments asked.
    const newHead = world.head();
    expect(newHead).not.toBe(draftHead);
    expect(gitIn(remote.bare, 'log', '-1', '--format=%P', newHead).trim()).toBe(draftHead);
    expect(gitIn(remote.bare, 'show', `${newHead}:README.md`)).toBe(
      '# Hello, World!\n\nRemember to commit and push often.\n',
    );
    expect(gitIn(remote.bare, 'log', '-1', '--format=%B', newHead)).toContain(
      `Co-authored-by: ${OWNER} <21031067+${OWNER}@users.noreply.github.com>`,
    );
    expect(gh.find('POST', `${R}/pulls`)).toHaveLength(1); // still the one pull request
    const trajectory = JSON.parse(await fs.readFile(round.returnvalue.trajectoryPath!, 'utf8'));
    const context = trajectory.frognano.task.context as { heading: string; text: string }[];
    // ...and it is in the task message the model read, after the issue.
    const taskMessage = String(trajectory.messages.find((m: { role: string }) => m.role === 'user').content);
    expect(taskMessage.indexOf('## Review feedback on your pull request')).toBeGreaterThan(
      taskMessage.indexOf('Spelling error in the README file'),
    );
    expect(taskMessage).toContain(`Comment by ${OWNER} on README.md, line 1:`);
    const feedback = context.find((s) => s.heading === 'Review feedback on your pull request')!.text;
    expect(feedback).toContain(`Comment by ${OWNER} on README.md, line 1:`);
    expect(feedback).toContain(
      `Comment by ${OWNER} on README.md, line 3:\n\`\`\`diff\n${INLINE[1]!.diff_hunk}\n\`\`\`\nSay "commit and push often."`,
    );

    // 4. The approval check is armed again on the new head; the description gained a run-history row.
    expect(checks.latest(newHead)).toMatchObject({
      conclusion: 'action_required',
      external_id: 'issue-1;not-by=codertocat',
    });
    expect(pr.body()).toContain(`| Follow-up 1 | review by ${OWNER} | \`${newHead.slice(0, 7)}\` |`);
    // The description describes the pull request as it is now: the files table is its whole diff against master,
    // the summary is the follow-up's (the draft's stays in the history), with the new history columns.
    const body = pr.body();
    const whole = compareFiles(remote, 'master', newHead);
    expect(whole).toHaveLength(1);
    const rows = whole.map((f) => `| \`${f.filename}\` | ${f.additions} | ${f.deletions} |`).join('\n');
    expect(body).toContain(
      `## Files changed (1, +2 −2)\n\n_The whole pull request against \`master\`, after follow-up round 1._\n\n| File | + | − |\n| --- | ---: | ---: |\n${rows}\n`,
    );
    expect(body).not.toContain('## Files changed (1, +1 −1)');
    expect(body.match(/^## Summary$/gm)).toHaveLength(1);
    expect(body).toContain(
      '_From follow-up round 1, the latest; earlier rounds are in the run history._\n\n```text\nAddressed both review comments',
    );
    expect(body).toContain('| Round | Trigger | Head | Result | Summary |');
    expect(body).toContain(
      `| Draft | issue | \`${draftHead.slice(0, 7)}\` | draft pull request opened | Fixed the spelling of "commit". |`,
    );
    expect(body).toContain(
      `| 1 file changed (+2 −2) | Addressed both review comments: the heading and the reminder. |`,
    );
    // Progress went to one status comment on the pull request. The runner was already waiting for work when the
    // label and the review came, and still each status comment said "queued" first: it is written before the job exists.
    expect(gh.find('POST', `${R}/issues/${PR}/comments`)).toHaveLength(1);
    expect(String(gh.find('POST', `${R}/issues/1/comments`)[0]!.body.body)).toContain('frognano: queued');
    expect(String(gh.find('POST', `${R}/issues/${PR}/comments`)[0]!.body.body)).toContain('frognano: round 1 queued');
    expect(gh.statusBodies().at(-1)).toContain('frognano: round 1 pushed');

    // 5. The reviewer who asked for the round approves: by the two-person rule that does not turn it green.
    await world.review(reviewPayload({ id: 556, state: 'approved', body: null, user: OWNER, head: newHead }));
    expect(decisions.at(-1)).toEqual({
      action: 'ignored',
      why: `@${OWNER} asked for the run that wrote this head; another maintainer must approve it`,
    });
    expect(checks.latest(newHead)).toMatchObject({
      conclusion: 'action_required',
      output: { title: 'Waiting for a second maintainer' },
    });

    // 6. A second writer approves: green.
    await world.review(reviewPayload({ id: 557, state: 'approved', body: 'LGTM', user: 'hubot', head: newHead }));
    expect(decisions.at(-1)).toMatchObject({ action: 'approved' });
    expect(checks.latest(newHead)).toMatchObject({ conclusion: 'success', output: { title: 'Approved by @hubot' } });
    expect(checks.latest(draftHead)!.conclusion).toBe('action_required'); // the old head's approval stays unearned

    // Approvals never queued another round; an inline comment event alone does not either (its review does).
    const comment = example('pull_request_review_comment', 'created', (x) => !!x.installation);
    Object.assign(comment.pull_request, prFields(newHead));
    comment.comment.body = '/frognano rename it';
    comment.installation = { id: labeled.installation.id };
    await world.receive('pull_request_review_comment', comment);
    expect(await world.queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 2,
      failed: 0,
    });

    for (const text of [...gh.statusBodies(), pr.body(), logs.lines.join('')]) expect(text).not.toContain(token);
  });
});

/** The pull request as webhook payloads carry it: the bot's draft from frognano/issue-1 in this repository. */
function prFields(head: string) {
  return {
    number: PR,
    state: 'open',
    html_url: `https://github.com/${OWNER}/${REPO}/pull/${PR}`,
    user: { login: 'frognano[bot]', id: 1, type: 'Bot' },
    head: { ref: BRANCH, sha: head, repo: { full_name: `${OWNER}/${REPO}` } },
    base: { ref: 'master', repo: { full_name: `${OWNER}/${REPO}` } },
  };
}

/** The real pull_request_review.submitted example, pointed at the bot's PR and the given review. */
function reviewPayload(o: { id: number; state: string; body: string | null; user: string; head: string }) {
  const p = example('pull_request_review', 'submitted', (x) => !!x.installation);
  p.installation = { id: 4242 };
  p.review.id = o.id;
  p.review.state = o.state;
  p.review.body = o.body;
  p.review.commit_id = o.head;
  p.review.user = { ...p.review.user, login: o.user, id: o.user === OWNER ? 21031067 : 7, type: 'User' };
  p.sender = { ...p.sender, login: o.user };
  const fields = prFields(o.head);
  p.pull_request = {
    ...p.pull_request,
    ...fields,
    head: { ...p.pull_request.head, ...fields.head },
    base: { ...p.pull_request.base, ...fields.base },
  };
  return p;
}
