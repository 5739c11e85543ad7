import { generateKeyPairSync } from 'node:crypto';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import nock from 'nock';
import { Probot, ProbotOctokit } from 'probot';
import pino from 'pino';
import { handleReviewSubmitted, type ReviewDecision } from '../../src/app/review.js';
import { APPROVAL_CHECK_NAME } from '../../src/github/checks.js';

const API = 'https://api.github.com';
const { privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
});
const HEAD = '0123456789abcdef0123456789abcdef01234567';

type Example = { name: string; examples: any[] };
function reviewPayload(
  over: { state?: string; ref?: string; commit?: string; user?: string; fork?: boolean; author?: string } = {},
) {
  const base = (examples as unknown as Example[])
    .find((e) => e.name === 'pull_request_review')!
    .examples.find((p) => p.action === 'submitted' && p.pull_request.head.repo)!;
  const p = structuredClone(base);
  p.installation = { id: 4242, node_id: 'x' };
  p.review.state = over.state ?? 'approved';
  p.review.user.login = over.user ?? 'maintainer';
  p.review.user.type = 'User';
  p.pull_request.head.ref = over.ref ?? 'frognano/issue-7';
  p.pull_request.head.sha = HEAD;
  p.review.commit_id = over.commit ?? HEAD;
  if (over.fork) p.pull_request.head.repo.full_name = 'someone/Hello-World';
  // frognano opens its pull requests as the app's bot account.
  p.pull_request.user = over.author
    ? { ...p.pull_request.user, login: over.author, type: 'User' }
    : { ...p.pull_request.user, login: 'frognano[bot]', type: 'Bot' };
  return p;
}

describe('handleReviewSubmitted (approval gate)', () => {
  let probot: Probot;
  let decisions: ReviewDecision[];
  beforeAll(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  afterAll(() => {
    nock.enableNetConnect();
    nock.restore(); // give later test files in this worker an unpatched http module
  });
  beforeEach(() => {
    decisions = [];
    probot = new Probot({
      appId: 1,
      privateKey,
      log: pino({ level: 'silent' }),
      Octokit: ProbotOctokit.defaults({ retry: { enabled: false }, throttle: { enabled: false } }),
    });
    probot.load((app) => {
      app.on('pull_request_review.submitted', async (ctx) => {
        decisions.push(await handleReviewSubmitted(ctx));
      });
    });
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    expect(pending).toEqual([]);
  });

  const token = () =>
    nock(API)
      .post('/app/installations/4242/access_tokens')
      .reply(201, { token: 'ghs_installationtoken0000000000000000', expires_at: '2099-01-01T00:00:00Z' });

  it('turns the check green and swaps the label when a writer approves', async () => {
    token();
    nock(API)
      .get('/repos/Codertocat/Hello-World/collaborators/maintainer/permission')
      .reply(200, { permission: 'write', role_name: 'write' })
      .get(`/repos/Codertocat/Hello-World/commits/${HEAD}/check-runs`)
      .query({ check_name: APPROVAL_CHECK_NAME, filter: 'latest' })
      .times(2) // the two-person rule reads it, then completing the check finds it
      .reply(200, { total_count: 1, check_runs: [{ id: 77 }] })
      .patch(
        '/repos/Codertocat/Hello-World/check-runs/77',
        (b) => b.status === 'completed' && b.conclusion === 'success' && b.output.title === 'Approved by @maintainer',
      )
      .reply(200, {})
      .post('/repos/Codertocat/Hello-World/labels', (b) => b.name === 'frognano:approved')
      .reply(201, {})
      .post('/repos/Codertocat/Hello-World/issues/2/labels', { labels: ['frognano:approved'] })
      .reply(200, [])
      .delete('/repos/Codertocat/Hello-World/issues/2/labels/frognano%3Aneeds-review')
      .reply(200, []);
    await probot.receive({ id: '1', name: 'pull_request_review', payload: reviewPayload() } as never);
    expect(decisions).toEqual([{ action: 'approved', checkRunId: 77 }]);
  });

  it('two-person rule: the person who asked for the run cannot approve its head; someone else can', async () => {
    token();
    const checks = () =>
      nock(API)
        .get(`/repos/Codertocat/Hello-World/commits/${HEAD}/check-runs`)
        .query({ check_name: APPROVAL_CHECK_NAME, filter: 'latest' })
        .reply(200, { total_count: 1, check_runs: [{ id: 77, external_id: 'issue-7;not-by=maintainer' }] });
    nock(API)
      .get('/repos/Codertocat/Hello-World/collaborators/Maintainer/permission')
      .reply(200, { permission: 'admin', role_name: 'admin' });
    checks();
    // The check keeps waiting (no status or conclusion sent) and says who must approve instead.
    nock(API)
      .patch(
        '/repos/Codertocat/Hello-World/check-runs/77',
        (b) =>
          b.status === undefined &&
          b.conclusion === undefined &&
          b.output.title === 'Waiting for a second maintainer' &&
          b.output.summary.startsWith('Maintainer approved, but asked for the run'),
      )
      .reply(200, {});
    await probot.receive({
      id: '4',
      name: 'pull_request_review',
      payload: reviewPayload({ user: 'Maintainer' }),
    } as never);
    expect(decisions).toEqual([
      {
        action: 'ignored',
        why: '@Maintainer asked for the run that wrote this head; another maintainer must approve it',
      },
    ]);

    nock(API)
      .get('/repos/Codertocat/Hello-World/collaborators/second/permission')
      .reply(200, { permission: 'write', role_name: 'write' });
    checks();
    checks();
    nock(API)
      .patch(
        '/repos/Codertocat/Hello-World/check-runs/77',
        (b) => b.conclusion === 'success' && b.output.title === 'Approved by @second',
      )
      .reply(200, {})
      .post('/repos/Codertocat/Hello-World/labels')
      .reply(201, {})
      .post('/repos/Codertocat/Hello-World/issues/2/labels')
      .reply(200, [])
      .delete('/repos/Codertocat/Hello-World/issues/2/labels/frognano%3Aneeds-review')
      .reply(200, []);
    await probot.receive({ id: '5', name: 'pull_request_review', payload: reviewPayload({ user: 'second' }) } as never);
    expect(decisions[1]).toEqual({ action: 'approved', checkRunId: 77 });
  });

  it('ignores a reviewer without write access', async () => {
    token();
    nock(API)
      .get('/repos/Codertocat/Hello-World/collaborators/drive-by/permission')
      .reply(200, { permission: 'read', role_name: 'triage' });
    await probot.receive({
      id: '2',
      name: 'pull_request_review',
      payload: reviewPayload({ user: 'drive-by' }),
    } as never);
    expect(decisions).toEqual([
      { action: 'ignored', why: '@drive-by has triage access; write access is needed to approve' },
    ]);
  });

  it.each([
    [{ state: 'commented' }, 'review state is commented, not approved'],
    [{ state: 'changes_requested' }, 'review state is changes_requested, not approved'],
    [{ ref: 'feature/x' }, 'branch feature/x is not a frognano branch'],
    [{ fork: true }, 'the pull request comes from a fork'],
    [{ author: 'someone' }, 'the pull request was not opened by a bot'],
    [{ commit: 'f'.repeat(40) }, 'the approval is for fffffff, but the head is 0123456'],
  ])('does nothing for %j', async (over, why) => {
    // No GitHub call at all is expected (nock would fail on any).
    await probot.receive({ id: '3', name: 'pull_request_review', payload: reviewPayload(over) } as never);
    expect(decisions).toEqual([{ action: 'ignored', why }]);
  });
});
