import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import nock from 'nock';
import { ProbotOctokit } from 'probot';
import { createApprovalCheck } from '../../src/github/checks.js';
import { appendRunHistory } from '../../src/github/followUpPullRequest.js';
import {
  GITHUB_BODY_LIMIT,
  renderPullRequestBody,
  TRAJECTORY_SUMMARY_CHARS,
  type PullRequestBodyInput,
} from '../../src/github/pullRequest.js';
import { markdownLink, safeRunUrl } from '../../src/github/runLink.js';
import { renderStatusComment } from '../../src/github/statusComment.js';
import { runPageUrl } from '../../src/runs/url.js';

/** Run-page links in what the bot writes on GitHub (issue #21); without a URL everything reads as before. */
const PAGE = runPageUrl('https://bot.example.org', { owner: 'octo', repo: 'hello', issueNumber: 7, round: 0 });

const input: PullRequestBodyInput = {
  issueNumber: 7,
  summary: 'Fixed it.',
  files: [],
  tests: [],
  exitReason: 'agent',
  turns: 100,
  elapsedSeconds: 600,
  jobId: 'octo-hello-7-1',
  renderTrajectory: (max) => 'step '.repeat(40_000).slice(0, max),
};

describe('run page links', () => {
  it('keeps only http(s) URLs and encodes what could break out of a Markdown link', () => {
    expect(safeRunUrl('javascript:alert(1)')).toBeNull();
    expect(safeRunUrl('not a url')).toBeNull();
    expect(safeRunUrl('https://x.test/runs/a)b')).toBe('https://x.test/runs/a%29b');
    expect(markdownLink('Round 1', 'https://x.test/r')).toBe('[Round 1](https://x.test/r)');
    expect(markdownLink('Round 1', 'data:x')).toBe('Round 1');
  });

  it('the PR description links the page and keeps only a summary of the steps', () => {
    const before = renderPullRequestBody(input);
    expect(before).toContain('Full trajectory: kept by the runner with its log, job `octo-hello-7-1`');
    expect(before.length).toBeGreaterThan(60_000);
    const body = renderPullRequestBody({ ...input, runPageUrl: PAGE });
    expect(body).toContain(
      `- Full trajectory: [every step, with timing and tokens](${PAGE}) (sign in with GitHub; people who can read this repository only), job \`octo-hello-7-1\``,
    );
    expect(body).toContain('<summary>Trajectory (summary; the run page has every step)</summary>');
    expect(body.length).toBeLessThan(TRAJECTORY_SUMMARY_CHARS + 3000);
    expect(body.length).toBeLessThan(GITHUB_BODY_LIMIT);
  });

  it('the run history links each round to its page', () => {
    const first = appendRunHistory(
      'Body',
      {
        round: 'Follow-up 1',
        trigger: 'review by `maint`',
        headSha: 'abcdef1234',
        result: 'pushed',
        url: `${PAGE.slice(0, -2)}/1`,
      },
      { headSha: null, url: PAGE },
    );
    expect(first).toContain(`| [Draft](${PAGE}) | issue | — | draft pull request opened | — |`);
    expect(first).toContain(
      `| [Follow-up 1](https://bot.example.org/runs/octo/hello/7/1) | review by \`maint\` | \`abcdef1\` | pushed | — |`,
    );
    const second = appendRunHistory(first, { round: 'CI fix 2', trigger: 'CI', headSha: null, result: 'no change' });
    expect(second).toContain(`| [Draft](${PAGE}) |`);
    expect(second).toContain('| CI fix 2 | CI | — | no change |');
  });

  it('the status comment links the page once the round has ended', () => {
    const done = renderStatusComment(
      { kind: 'pull_request', url: 'https://github.com/octo/hello/pull/8', number: 8 },
      { runUrl: PAGE },
    );
    expect(done).toContain(
      `🔎 [Every step of this run](${PAGE}) (sign in with GitHub; people who can read this repository only).`,
    );
    expect(renderStatusComment({ kind: 'failed', reason: 'x' }, { runUrl: PAGE, round: 2 })).toContain(
      'Every step of this run',
    );
    expect(renderStatusComment({ kind: 'running', turn: 3 }, { runUrl: PAGE })).not.toContain('Every step');
    expect(renderStatusComment({ kind: 'failed', reason: 'x' })).not.toContain('Every step');
  });

  describe('approval check', () => {
    beforeEach(() => {
      if (!nock.isActive()) nock.activate();
      nock.disableNetConnect();
    });
    afterEach(() => {
      nock.cleanAll();
      nock.enableNetConnect();
    });

    it("points the check's details at the run page", async () => {
      const octokit = new ProbotOctokit({
        auth: { token: 'test-token' },
        retry: { enabled: false },
        throttle: { enabled: false },
      });
      let sent: any;
      nock('https://api.github.com')
        .post('/repos/octo/hello/check-runs', (b) => ((sent = b), true))
        .reply(201, { id: 5 });
      await createApprovalCheck(octokit, {
        owner: 'octo',
        repo: 'hello',
        headSha: 'a'.repeat(40),
        pullRequestUrl: 'https://github.com/octo/hello/pull/8',
        issueNumber: 7,
        detailsUrl: PAGE,
      });
      expect(sent.details_url).toBe(PAGE);
    });
  });
});
