import { promises as fs } from 'node:fs';
import { jobIdFor } from '../../src/queue/schema.js';
import { labeledPayload } from '../app/helpers.js';
import { gitIn } from '../github/gitRepo.js';
import { createWorld, type World } from '../support/world.js';

/**
 * The whole path: a real issues.labeled webhook payload into the Probot app -> BullMQ job in Redis ->
 * a real BullMQ Worker runs processJob -> branch pushed to a real bare repository -> draft PR created.
 * Only GitHub's HTTP API is simulated (nock).
 */
describe('webhook -> queue -> worker -> draft pull request', () => {
  let opened: World | undefined;
  afterAll(() => opened?.close());

  it('opens a draft PR for a labelled issue', async () => {
    const payload = labeledPayload(); // Codertocat/Hello-World#1, "Spelling error in the README file"
    const owner = payload.repository.owner.login as string;
    const repo = payload.repository.name as string;
    const base = payload.repository.default_branch as string; // `master` in this example
    const world = (opened = await createWorld({
      name: 'e2e-runner',
      files: { 'README.md': '# Hello World\n\nRemember to comitt often.\n' },
      base,
      pullRequest: { number: 12, head: 'frognano/issue-1', permissions: { [payload.sender.login]: 'admin' } },
      // Started after the job is queued: the job waits for a runner.
      runner: false,
      turns: [
        { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] },
        {
          content: '',
          tool_calls: [
            { name: 'Edit', arguments: { file_path: 'README.md', old_string: 'comitt', new_string: 'commit' } },
          ],
        },
        { content: 'Fixed the spelling of "commit" in README.md.', tool_calls: [] },
      ],
    }));
    const { remote, gh, token, logs } = world;

    await world.label(payload);
    const jobId = jobIdFor({ owner, repo, issueNumber: payload.issue.number, attempt: 1 });
    expect(await (await world.queue.getJob(jobId))?.getState()).toBe('waiting');

    world.startRunner();
    const job = await world.round(jobId, 60_000);
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toMatchObject({
      outcome: 'pull_request',
      pullRequestNumber: 12,
      branch: 'frognano/issue-1',
    });

    // The branch is in the remote with the model's edit.
    const head = gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(gitIn(remote.bare, 'show', `${head}:README.md`)).toBe('# Hello World\n\nRemember to commit often.\n');

    // The PR creation call GitHub received.
    const pulls = gh.find('POST', `/repos/${owner}/${repo}/pulls`);
    expect(pulls).toHaveLength(1);
    expect(pulls[0].body).toMatchObject({
      head: 'frognano/issue-1',
      base,
      draft: true,
      title: 'frognano: Spelling error in the README file',
    });
    expect(pulls[0].body.body).toContain('Refs #1');
    expect(pulls[0].body.body).toContain('| `README.md` | 1 | 1 |');
    expect(gh.find('POST', '/check-runs')[0].body).toMatchObject({ head_sha: head, conclusion: 'action_required' });

    // One status comment for the issue (created by the app when queued), edited by the runner to the end state.
    expect(gh.find('POST', '/issues/1/comments')).toHaveLength(1);
    const bodies = gh.statusBodies();
    expect(bodies[0]).toContain('queued');
    expect(bodies.at(-1)).toContain('draft pull request #12 opened');

    const stored = await fs.readFile(job.returnvalue.trajectoryPath!, 'utf8');
    for (const text of [stored, pulls[0].body.body, ...bodies, logs.lines.join('')]) expect(text).not.toContain(token);
  });
});
