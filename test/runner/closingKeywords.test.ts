import { ReplayBackend } from '../../src/inference/replay.js';
import { HOSTILE_FINAL_MESSAGE, liveClosingReferences } from '../github/closingReferences.js';
import { gitIn } from '../github/gitRepo.js';
import { jobData } from './fixtures.js';
import { followUpOn, useRunnerRounds } from './rounds.js';
import type { RecordedCall } from './githubRecorder.js';

/**
 * Issue #22: the model ends with a message naming issues after closing keywords in every form GitHub knows. What
 * reaches GitHub from a first attempt and from a follow-up round (the pushed commit, read back from a real bare
 * remote, and every request body: pull request, status comment, check run, labels, run history) closes nothing.
 */
const REPO = 'widgets';
const BRANCH = 'frognano/issue-7';
const FILES = { 'hello.txt': 'hi\n' };
const HOSTILE_TITLE = 'Fixes #3: closes https://ghe.example.com/acme/widgets/issues/4';
const replay = (content: string) =>
  ReplayBackend.fromTurns([
    { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content } }] },
    { content: HOSTILE_FINAL_MESSAGE, tool_calls: [] },
  ]);

function expectNothingCloses(commitMessage: string, calls: RecordedCall[]): void {
  expect(liveClosingReferences(HOSTILE_FINAL_MESSAGE)).toHaveLength(7);
  expect(commitMessage).toContain('Refs #7.'); // the bot's own reference, live: it closes nothing
  expect(commitMessage.replace(/[\u200B\u2060]/g, '')).toContain(HOSTILE_FINAL_MESSAGE); // the model's words, as written
  expect(liveClosingReferences(commitMessage)).toEqual([]);
  const posted = calls
    .filter((c) => c.method !== 'GET' && c.body !== undefined)
    .map((c) => `${c.method} ${c.path}: ${JSON.stringify(c.body)}`);
  expect(posted.length).toBeGreaterThan(3);
  for (const text of posted) expect({ text, live: liveClosingReferences(text) }).toEqual({ text, live: [] });
}

describe('a hostile final message closes no issue (runner)', () => {
  const rounds = useRunnerRounds(REPO);

  it('first attempt: the commit message, pull request, status comment and check run', async () => {
    await rounds.setup({ owner: 'ck', files: FILES, backend: replay('hello\n') });
    const { owner, remote, gh } = rounds;
    const result = await rounds.process(jobData(owner, REPO, { title: HOSTILE_TITLE }));

    expect(result).toMatchObject({ outcome: 'pull_request', branch: BRANCH });
    const message = gitIn(remote.bare, 'log', '-1', '--format=%B', `refs/heads/${BRANCH}`);
    expectNothingCloses(message, gh.calls);
    expect(gh.find('POST', '/check-runs')).toHaveLength(1);
  });

  it('follow-up round: the commit message and the run history', async () => {
    await rounds.setup({
      owner: 'ck',
      files: FILES,
      branches: { [BRANCH]: { 'hello.txt': 'hello\n' } },
      backend: replay('Hello, world\n'),
      pullRequest: { head: BRANCH },
    });
    const { owner, remote, gh, pr } = rounds;
    const followUp = followUpOn(remote, BRANCH, { source: 'review', reviewId: 80 });
    const triggeredBy = { login: 'reviewer', id: 583231 };
    const data = jobData(owner, REPO, { title: HOSTILE_TITLE, trigger: 'review', triggeredBy, followUp });
    const result = await rounds.process(data);

    expect(result).toMatchObject({ outcome: 'pull_request', pullRequestNumber: 5, branch: BRANCH });
    const message = gitIn(remote.bare, 'log', '-1', '--format=%B', `refs/heads/${BRANCH}`);
    expect(message).toMatch(/^frognano: address review on #5 \(round 1\)/);
    expectNothingCloses(message, [...gh.calls, ...pr.calls]);
    expect(liveClosingReferences(pr.body())).toEqual([]);
  });
});
