import { describe, expect, test } from '@jest/globals';
import { appendRunHistory } from '../../src/github/followUpPullRequest.js';
import { pullRequestTitle, renderPullRequestBody } from '../../src/github/pullRequest.js';
import { renderStatusComment } from '../../src/github/statusComment.js';
import { HOSTILE_FINAL_MESSAGE, liveClosingReferences } from './closingReferences.js';

/**
 * Issue #22: each place in src/github where model (or issue) text reaches GitHub, fed the hostile final message,
 * posts no live closing reference. Commit messages and the check run are checked end to end in
 * test/runner/closingKeywords.test.ts.
 */
const HOSTILE = HOSTILE_FINAL_MESSAGE;

describe('no posted text closes an issue', () => {
  test('the pull request title (from the issue title)', () => {
    const title = pullRequestTitle('Fixes #3: closes https://ghe.example.com/acme/widgets/issues/4', 7);
    expect(liveClosingReferences(title)).toEqual([]);
    const shown = title.replace(/[\u200B\u2060]/g, '');
    expect(shown).toBe('frognano: Fixes #3: closes https://ghe.example.com/acme/widgets/issues/4');
  });

  test('the pull request body: summary, trajectory, file names, test commands and their output', () => {
    const body = renderPullRequestBody({
      issueNumber: 7,
      summary: HOSTILE,
      files: [{ path: 'fixes #1/closes acme/widgets#2.txt', additions: 1, deletions: 0, binary: false }],
      tests: [{ command: `echo "${HOSTILE}"; exit 1`, exitCode: 1, timedOut: false, outputTail: HOSTILE }],
      exitReason: 'agent',
      exitReasonText: 'the model finished',
      turns: 3,
      elapsedSeconds: 12,
      jobId: 'acme/widgets#7@1',
      renderTrajectory: () => `### Final message\n\n${HOSTILE}\n`,
    });
    expect(liveClosingReferences(body)).toEqual([]);
    expect(body).toContain('Refs #7'); // the bot's own reference stays live (it closes nothing)
  });

  test('the status comment: the summary, a running detail and a failure reason', () => {
    const opened = {
      kind: 'pull_request',
      url: 'https://github.com/acme/widgets/pull/5',
      number: 5,
      summary: HOSTILE,
    } as const;
    const comments = [
      renderStatusComment(opened),
      renderStatusComment({ kind: 'running', turn: 2, maxTurns: 100, detail: HOSTILE }),
      renderStatusComment({ kind: 'failed', reason: HOSTILE }),
      renderStatusComment({ kind: 'no_patch', reason: HOSTILE.replace(/\n/g, ' ') }),
      renderStatusComment(opened, { round: 2 }),
    ];
    for (const comment of comments) expect(liveClosingReferences(comment)).toEqual([]);
  });

  test('the run history row a follow-up round adds to the pull request description', () => {
    const entry = { round: 'Follow-up 1', trigger: 'review by maint', headSha: 'abcdef1234567', result: HOSTILE };
    const body = appendRunHistory('Draft.', entry);
    expect(liveClosingReferences(body)).toEqual([]);
  });
});
