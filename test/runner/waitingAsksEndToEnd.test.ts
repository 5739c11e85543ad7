import { promises as fs } from 'node:fs';
import nock from 'nock';
import { currentAttempt } from '../../src/queue/attempts.js';
import { pullRequestKey } from '../../src/queue/followUps.js';
import { JobDataSchema } from '../../src/queue/schema.js';
import { botPullRequestSlice, commentOnPullRequest, reviewOnPullRequest } from '../app/helpers.js';
import { gitIn } from '../github/gitRepo.js';
import { waitFor } from '../support/waitFor.js';
import { API, createWorld, type World, editTurn, OWNER, README, REPO } from '../support/world.js';

const R = `/repos/${OWNER}/${REPO}`;
const PR = 12;
const BRANCH = 'frognano/issue-1';
const HUNK = '@@ -1,3 +1,3 @@\n # Hello World\n \n-Remember to comitt often.\n+Remember to commit often.';

/**
 * Asks that arrive while a round runs, end to end: real webhook payloads, Redis, BullMQ, a real runner worker and
 * bare git repository; GitHub's REST API is nock. Round 1 runs; a comment and a review ask meanwhile and are told
 * "queued after round 1"; when round 1 ends the runner queues round 2 once, with both asks merged oldest first.
 */
describe('asks while a round runs wait, merged, for the next round', () => {
  let opened: World | undefined;
  afterAll(() => opened?.close());

  it('round 1 ends -> round 2 is queued once with both asks, oldest first', async () => {
    const world = (opened = await createWorld({
      name: 'e2e-asks',
      files: { 'README.md': README },
      branches: { [BRANCH]: { 'README.md': README.replace('comitt', 'commit') } },
      pullRequest: { number: PR, head: BRANCH, permissions: { [OWNER]: 'admin', hubot: 'write' } },
      turns: [
        // Round 1 takes a while: the other asks come meanwhile.
        {
          content: '',
          delay_ms: 2500,
          tool_calls: [
            {
              name: 'Edit',
              arguments: { file_path: 'README.md', old_string: '# Hello World', new_string: '# Hello, World!' },
            },
          ],
        },
        { content: 'Greeted the world properly.', tool_calls: [] },
        editTurn('README.md', 'commit often.', 'commit and push often.'),
        { content: 'Did both: the reminder says push, as the review asked.', tool_calls: [] },
      ],
    }));
    const { gh, remote } = world;
    nock(API)
      .persist()
      .get(`${R}/issues/1`)
      .reply(200, { number: 1, title: 'Spelling error in the README file', body: 'comitt -> commit' })
      .post(/\/issues\/comments\/\d+\/reactions$/)
      .reply(201, {})
      .get(new RegExp(`^${R}/pulls/${PR}/reviews/555/comments`))
      .query(true)
      .reply(200, [
        {
          body: 'Say "commit and push".',
          path: 'README.md',
          line: 3,
          original_line: 3,
          start_line: null,
          diff_hunk: HUNK,
          user: { login: 'hubot', type: 'User' },
        },
      ]);

    await world.comment(prComment('/frognano the heading should say Hello, World!', 201, OWNER));
    await waitFor('round 1 to run', async () => (await (await world.queue.getJob(round(1)))?.getState()) === 'active');

    await world.comment(prComment('/frognano and mention pushing', 202, OWNER));
    await world.review(reviewPayload(555, 'One more thing.\n\n/frognano', 'hubot'));
    const replies = () => gh.find('POST', `${R}/issues/${PR}/comments`).map((c) => String(c.body.body));
    expect(replies().filter((b) => b.startsWith('Queued after round 1:'))).toHaveLength(2);
    expect(replies().some((b) => b.includes('did not start'))).toBe(false);
    expect(await world.queue.getJob(round(2))).toBeUndefined(); // nothing starts while round 1 runs

    const second = await world.round(round(2));
    expect((await world.queue.getJob(round(1)))!.returnvalue).toMatchObject({ outcome: 'pull_request' });
    expect(second.returnvalue).toMatchObject({ outcome: 'pull_request' });
    const data = JobDataSchema.parse(second.data);
    expect(data.followUp!.asks!.map((a) => [a.author.login, a.source])).toEqual([
      [OWNER, 'comment'],
      ['hubot', 'review'],
    ]);
    expect(data.followUp!.asks![0]!.feedback).toBe('and mention pushing');

    // The model read both, oldest first, the review's inline comment with its file, line and hunk.
    const trajectory = JSON.parse(await fs.readFile(second.returnvalue.trajectoryPath!, 'utf8'));
    const feedback = (trajectory.frognano.task.context as { heading: string; text: string }[]).find(
      (s) => s.heading === 'Review feedback on your pull request',
    )!.text;
    expect(feedback).toContain('Address the 2 requests below (oldest first) in one set of changes');
    expect(feedback).toMatch(
      /Request 1 of 2: Codertocat wrote \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\):\nand mention pushing/,
    );
    expect(feedback.indexOf('Request 2 of 2: hubot wrote in a review')).toBeGreaterThan(
      feedback.indexOf('Request 1 of 2'),
    );
    expect(feedback).toContain(
      `Comment by hubot on README.md, line 3:\n\`\`\`diff\n${HUNK}\n\`\`\`\nSay "commit and push".`,
    );

    const head = gitIn(remote.bare, 'rev-parse', `refs/heads/${BRANCH}`).trim();
    expect(gitIn(remote.bare, 'show', `${head}:README.md`)).toBe(
      '# Hello, World!\n\nRemember to commit and push often.\n',
    );
    const message = gitIn(remote.bare, 'log', '-1', '--format=%B', head);
    expect(message).toContain(`Co-authored-by: ${OWNER} <21031067+${OWNER}@users.noreply.github.com>`);
    expect(message).toContain('Co-authored-by: hubot <7+hubot@users.noreply.github.com>');
    // Exactly once: two rounds, no third; the runner said "round 2 queued" on the pull request before it ran.
    // A third round would be queued within moments of round 2's end: give it that long (no event says "none came").
    await new Promise((r) => setTimeout(r, 500));
    expect(await currentAttempt(world.redis, pullRequestKey(OWNER, REPO, PR))).toBe(2);
    expect(await world.queue.getJobCounts('waiting', 'active', 'completed', 'failed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 2,
      failed: 0,
    });
    expect(gh.statusBodies().some((b) => b.includes('frognano: round 2 queued'))).toBe(true);
    expect(gh.statusBodies().at(-1)).toContain('frognano: round 2 pushed');
  });
});

const round = (n: number) => `codertocat/hello-world#${PR}@${n}`;

const PULL = botPullRequestSlice({ number: PR, head: BRANCH, sha: 'a'.repeat(40), base: 'master' });

function prComment(body: string, commentId: number, user: string) {
  return commentOnPullRequest(body, { pullNumber: PR, commentId, user, userId: 21031067 });
}

function reviewPayload(id: number, body: string, user: string) {
  return reviewOnPullRequest({ id, body, user, pr: PULL });
}
