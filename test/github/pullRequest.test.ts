import nock from 'nock';
import { ProbotOctokit } from 'probot';
import { APPROVAL_CHECK_NAME, completeApprovalCheck, createApprovalCheck } from '../../src/github/checks.js';
import {
  checkGuardrails,
  GITHUB_BODY_LIMIT,
  labelApproved,
  labelNeedsReview,
  NEEDS_REVIEW_LABEL,
  openDraftPullRequest,
  pullRequestTitle,
  renderPullRequestBody,
  type PullRequestBodyInput,
} from '../../src/github/pullRequest.js';
import { defaultRepoConfig, parseRepoConfig } from '../../src/github/repoConfig.js';

const API = 'https://api.github.com';
const octokit = () =>
  new ProbotOctokit({ auth: { token: 'test-token' }, retry: { enabled: false }, throttle: { enabled: false } });
const f = (p: string, a = 1, d = 0) => ({ path: p, additions: a, deletions: d, binary: false });

beforeAll(() => {
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending).toEqual([]);
});
afterAll(() => {
  nock.enableNetConnect();
  // nock patches Node's shared http module; later test files in this jest worker (dockerode over a unix socket) must get it back.
  nock.restore();
});

/** The bot's draft for octo/hello#1 (frognano/issue-1 into main), titled T, with `body`. */
const openIssue1Draft = (body: string) =>
  openDraftPullRequest(octokit(), {
    owner: 'octo',
    repo: 'hello',
    head: 'frognano/issue-1',
    base: 'main',
    title: 'T',
    body,
  });

describe('guardrails', () => {
  it('accepts a small change', () => {
    expect(checkGuardrails([f('src/a.ts', 3, 1)], defaultRepoConfig())).toEqual({ ok: true });
  });
  it('refuses too many files and too many lines', () => {
    const cfg = parseRepoConfig('limits: {maxFilesChanged: 2, maxLinesChanged: 10}');
    expect(checkGuardrails([f('a'), f('b'), f('c')], cfg)).toEqual({
      ok: false,
      reason: 'the patch changes 3 files; this repository allows at most 2 (limits.maxFilesChanged)',
    });
    expect(checkGuardrails([f('a', 6, 5)], cfg)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('changes 11 lines'),
    });
  });
  it('refuses workflow changes unless allowed', () => {
    const files = [f('src/x.ts'), f('.github/workflows/ci.yml')];
    expect(checkGuardrails(files, defaultRepoConfig())).toMatchObject({
      ok: false,
      reason: expect.stringContaining('`.github/workflows/ci.yml`'),
    });
    expect(checkGuardrails(files, parseRepoConfig('allowWorkflowChanges: true'))).toEqual({ ok: true });
  });
  it('refuses forbidden globs, dotfiles included', () => {
    const cfg = parseRepoConfig("forbiddenPaths: ['secrets/**', '**/*.lock']");
    expect(checkGuardrails([f('secrets/.env')], cfg)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('`secrets/**`'),
    });
    expect(checkGuardrails([f('pkg/yarn.lock')], cfg)).toMatchObject({ ok: false });
    expect(checkGuardrails([f('src/secrets.ts')], cfg)).toEqual({ ok: true });
  });
});

describe('pull request body', () => {
  const base: PullRequestBodyInput = {
    issueNumber: 42,
    summary: 'Fixed the off-by-one in `range()`. cc @octocat',
    files: [f('src/range.ts', 3, 1), { path: 'logo.png', additions: 0, deletions: 0, binary: true }],
    tests: [
      { command: 'npm test', exitCode: 0, timedOut: false, outputTail: 'ok' },
      { command: 'npm run lint', exitCode: 1, timedOut: false, outputTail: 'lint: ```bad```' },
    ],
    exitReason: 'completed',
    turns: 7,
    elapsedSeconds: 93.4,
    model: 'FrogNano-4B (onnx)',
    runner: 'gpu-1',
    jobId: 'octo/hello#42@1',
    renderTrajectory: () => '### Turn 1\nRead src/range.ts',
  };

  it('has the approval notice, Refs (not Fixes), files, tests, run facts and the trajectory in <details>', () => {
    const body = renderPullRequestBody(base);
    expect(body).toContain('requires human approval');
    expect(body).toContain('Refs #42');
    expect(body).not.toMatch(/(fixes|closes|resolves) #42/i);
    expect(body).toContain('## Summary\n\n```text\nFixed the off-by-one in `range()`. cc @\u200Boctocat\n```\n'); // fenced, no ping
    expect(body).toContain('## Files changed (2, +3 −1)');
    expect(body).toContain('| `src/range.ts` | 3 | 1 |');
    expect(body).toContain('| `logo.png` | binary | |');
    expect(body).toContain('- `npm test`: ✅ passed');
    expect(body).toContain('- `npm run lint`: ❌ failed (exit 1)');
    expect(body).toContain('````text\nlint: ```bad```\n````'); // fence longer than the output's backticks
    expect(body).toContain('- Exit reason: `completed`');
    expect(body).toContain('- Turns: 7, elapsed: 93 s');
    expect(body).toContain('- Full trajectory: kept by the runner with its log, job `octo/hello#\u200B42@1`');
    expect(body).not.toContain('/var/lib');
    expect(body).toMatch(
      /\n\n<details><summary>Trajectory<\/summary>\n\n### Turn 1\nRead src\/range.ts\n\n<\/details>\n$/,
    );
  });

  it("shrinks the trajectory to fit GitHub's limit", () => {
    let asked = 0;
    const body = renderPullRequestBody({
      ...base,
      summary: 's'.repeat(50_000),
      renderTrajectory: (max) => {
        asked = max;
        return 't'.repeat(max + 10_000); // a renderer that overshoots is still cut
      },
    });
    expect(body.length).toBeLessThanOrEqual(GITHUB_BODY_LIMIT);
    expect(asked).toBeGreaterThan(500);
    expect(asked).toBeLessThan(GITHUB_BODY_LIMIT - 8000);
    expect(body).toContain("[trajectory cut to fit GitHub's limit]");
    expect(body.endsWith('</details>\n')).toBe(true);
  });

  it('keeps hostile model text inert: no pings, references, markers, headings or escapes from <details>', () => {
    const Z = '\u200B';
    const WJ = '\u2060';
    const body = renderPullRequestBody({
      ...base,
      summary: '# Approved by @maintainers\n</details>\n<!-- frognano:status -->\nFixes #1, closes octo/other#2',
      files: [f('<!-- frognano:status -->@x.ts', 1, 0)],
      tests: [{ command: 'npm test', exitCode: 1, timedOut: false, outputTail: 'ping @admin #3\n<!-- frognano -->' }],
      renderTrajectory: () => '### Turn 1\n```text\n@octocat <!-- frognano:pr --> Fixes #4\n```',
    });
    expect(body).toContain(
      [
        '## Summary',
        '',
        '```text',
        `# Approved by @${Z}maintainers`,
        '</details>',
        `<${Z}!-- frognano:status --${Z}>`,
        `F${WJ}ixes #${Z}1, c${WJ}loses octo/other#${Z}2`,
        '```',
      ].join('\n'),
    );
    expect(body).toContain(`| \`<${Z}!-- frognano:status --${Z}>@${Z}x.ts\` | 1 | 0 |`);
    expect(body).toContain(['```text', `ping @${Z}admin #${Z}3`, `<${Z}!-- frognano --${Z}>`, '```'].join('\n'));
    expect(body).toContain(
      ['```text', `@${Z}octocat <${Z}!-- frognano:pr --${Z}> F${WJ}ixes #${Z}4`, '```'].join('\n'),
    );
    // Whatever the model wrote: no live mention, no hidden marker, no closing keyword with a live reference.
    expect(body).not.toMatch(/(^|[^A-Za-z0-9])@[A-Za-z0-9]/);
    expect(body).not.toContain('<!--');
    expect(body.replace('Refs #42', '')).not.toMatch(/#\d/);
  });

  it('defangs the issue title in the pull request title', () => {
    expect(pullRequestTitle('Crash\n@team/all see #9 <!-- x -->', 9)).toBe(
      'frognano: Crash @\u200Bteam/all see #\u200B9 <\u200B!-- x --\u200B>',
    );
    expect(pullRequestTitle('   ', 9)).toBe('frognano: issue #9');
  });

  it('says when no tests are configured', () => {
    expect(renderPullRequestBody({ ...base, tests: [] })).toContain('No test commands are configured');
  });
});

describe('GitHub calls', () => {
  it('opens a draft PR, and updates the open one for the same branch on 422', async () => {
    nock(API)
      .post(
        '/repos/octo/hello/pulls',
        (b) => b.draft === true && b.head === 'frognano/issue-1' && b.base === 'main' && b.body === 'B',
      )
      .reply(201, { number: 5, html_url: 'https://github.com/octo/hello/pull/5' });
    expect(await openIssue1Draft('B')).toEqual({
      number: 5,
      url: 'https://github.com/octo/hello/pull/5',
      created: true,
    });

    nock(API)
      .post('/repos/octo/hello/pulls')
      .reply(422, {
        message: 'Validation Failed',
        errors: [{ message: 'A pull request already exists for octo:frognano/issue-1.' }],
      })
      .get('/repos/octo/hello/pulls')
      .query({ head: 'octo:frognano/issue-1', state: 'open' })
      .reply(200, [{ number: 5, html_url: 'https://github.com/octo/hello/pull/5' }])
      .patch('/repos/octo/hello/pulls/5', { title: 'T', body: 'B2' })
      .reply(200, {});
    expect(await openIssue1Draft('B2')).toMatchObject({
      number: 5,
      created: false,
    });
  });

  it('creates the label when missing and tolerates an existing one', async () => {
    nock(API)
      .post('/repos/octo/hello/labels', (b) => b.name === NEEDS_REVIEW_LABEL && /^[0-9a-f]{6}$/.test(b.color))
      .reply(422, { message: 'Validation Failed', errors: [{ code: 'already_exists' }] })
      .post('/repos/octo/hello/issues/5/labels', { labels: [NEEDS_REVIEW_LABEL] })
      .reply(200, []);
    await labelNeedsReview(octokit(), 'octo', 'hello', 5);

    nock(API)
      .post('/repos/octo/hello/labels', (b) => b.name === 'frognano:approved')
      .reply(201, {})
      .post('/repos/octo/hello/issues/5/labels', { labels: ['frognano:approved'] })
      .reply(200, [])
      .delete(`/repos/octo/hello/issues/5/labels/${encodeURIComponent(NEEDS_REVIEW_LABEL)}`)
      .reply(404, { message: 'Label does not exist' });
    await labelApproved(octokit(), 'octo', 'hello', 5);
  });

  it('blocks with an action_required check run and completes it on approval', async () => {
    const sha = 'a'.repeat(40);
    nock(API)
      .post(
        '/repos/octo/hello/check-runs',
        (b) =>
          b.name === APPROVAL_CHECK_NAME &&
          b.head_sha === sha &&
          b.status === 'completed' &&
          b.conclusion === 'action_required' &&
          b.details_url === 'https://github.com/octo/hello/pull/5' &&
          /must review/.test(b.output.summary),
      )
      .reply(201, { id: 99 });
    expect(
      await createApprovalCheck(octokit(), {
        owner: 'octo',
        repo: 'hello',
        headSha: sha,
        pullRequestUrl: 'https://github.com/octo/hello/pull/5',
        issueNumber: 1,
      }),
    ).toBe(99);

    nock(API)
      .get(`/repos/octo/hello/commits/${sha}/check-runs`)
      .query({ check_name: APPROVAL_CHECK_NAME, filter: 'latest' })
      .reply(200, { total_count: 1, check_runs: [{ id: 99 }] })
      .patch(
        '/repos/octo/hello/check-runs/99',
        (b) => b.conclusion === 'success' && b.output.title === 'Approved by @maint',
      )
      .reply(200, { id: 99 });
    expect(
      await completeApprovalCheck(octokit(), { owner: 'octo', repo: 'hello', headSha: sha, approvedBy: 'maint' }),
    ).toBe(99);
  });
});
