import { describe, expect, test } from '@jest/globals';
import nock from 'nock';
import { nextAttempt } from '../../src/queue/attempts.js';
import { pullRequestKey } from '../../src/queue/followUps.js';
import { JobDataSchema } from '../../src/queue/schema.js';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { startCiJudgeWorker } from '../../src/app/ciJudgeWorker.js';
import { createCiJudgeQueue, type CiJudgeQueue } from '../../src/queue/ciJudge.js';
import { startWaitingRound } from '../../src/queue/followUps.js';
import { recheckCiAfterRound } from '../../src/runner/ciRecheck.js';
import { waitFor } from '../support/redisServers.js';
import {
  API,
  REDIS_URL,
  commentPayload,
  useAppHarness,
  example,
  INSTALLATION_ID,
  nockPermission,
  receive,
} from './helpers.js';

const REPO = '/repos/Codertocat/Hello-World';
const PR = 12;
const BRANCH = 'frognano/issue-1';
const HEAD = 'a'.repeat(40);
const BASE = 'b'.repeat(40);
const ROUND1 = `codertocat/hello-world#${PR}@1`;

let ciJudge: CiJudgeQueue;
let judgeWorker: Worker;
let judgeConn: Redis;
/** Tests that are not about the settle window judge at once (`ciFix.settleSeconds: 0`). */
const JUDGE_NOW = 'ciFix:\n  settleSeconds: 0\n';

/** GitHub as these tests need it: check runs and statuses per commit, the PR, its head commit's author, the config. */
interface Fake {
  runs: Record<string, object[]>;
  statuses: Record<string, object[]>;
  author: string;
  config: string | null;
  prHead: string;
  /** What GET /pulls?head= answers (open pull requests only): the bot's by default. */
  openPulls?: object[];
  /** GitHub fails the next head-commit read (500). */
  failCommit?: boolean;
  comments: string[];
  /** Bodies of edited comments (the status comment rewritten in place). */
  edits: string[];
  labels: string[][];
  calls: string[];
}
let gh: Fake;

const run = (name: string, conclusion: string | null, o: { id?: number; app?: string } = {}) => ({
  id: o.id ?? 4000 + name.length,
  name,
  status: conclusion ? 'completed' : 'in_progress',
  conclusion,
  html_url: `https://github.com/Codertocat/Hello-World/runs/${o.id ?? 1}`,
  app: { slug: o.app ?? 'github-actions' },
});

function pullRequest() {
  return {
    number: PR,
    state: 'open',
    html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}`,
    user: { login: 'frognano[bot]', type: 'Bot' },
    body: 'Refs #1\n\n<!-- frognano:history -->\n| Round | Trigger | Commit | Result |\n| --- | --- | --- | --- |\n| CI fix 1 | failing CI: `test` | `1234567` | 1 file changed (+1 −1) |\n<!-- /frognano:history -->',
    head: { ref: BRANCH, sha: gh.prHead, repo: { full_name: 'Codertocat/Hello-World' } },
    base: { ref: 'master', sha: BASE, repo: { full_name: 'Codertocat/Hello-World' } },
  };
}

function fakeGitHub(): void {
  const rec = (uri: string) => void gh.calls.push(uri.split('?')[0]!);
  nock(API)
    .persist()
    .get(/\/commits\/[0-9a-f]{40}\/check-runs/)
    .query(true)
    .reply((uri) => {
      rec(uri);
      const runs = gh.runs[/commits\/([0-9a-f]{40})/.exec(uri)![1]!] ?? [];
      return [200, { total_count: runs.length, check_runs: runs }];
    })
    .get(/\/commits\/[0-9a-f]{40}\/status/)
    .query(true)
    .reply((uri) => [200, { state: 'x', statuses: gh.statuses[/commits\/([0-9a-f]{40})/.exec(uri)![1]!] ?? [] }])
    .get(`${REPO}/pulls`)
    .query((q) => q.head === `Codertocat:${BRANCH}` && q.state === 'open')
    .reply(() => [200, gh.openPulls ?? [pullRequest()]])
    .get(/\/contents\/\.github(%2F|\/)frognano\.yml/)
    .query({ ref: 'master' })
    .reply(() =>
      gh.config === null
        ? [404, { message: 'Not Found' }]
        : [200, { content: Buffer.from(gh.config).toString('base64'), encoding: 'base64' }],
    )
    .get(new RegExp(`^${REPO}/commits/[0-9a-f]{40}$`))
    .reply((uri) => {
      rec(uri);
      if (gh.failCommit) return ((gh.failCommit = false), [500, { message: 'Server Error' }]);
      const name = gh.author;
      return [
        200,
        { sha: uri.split('/').pop(), commit: { author: { name, email: 'x@y' }, committer: { name, email: 'x@y' } } },
      ];
    })
    .get(`${REPO}/issues/1`)
    .reply(200, { number: 1, title: 'Spelling error in the README file', body: 'comitt -> commit' })
    .get(`${REPO}/issues/${PR}/comments`)
    .query(true)
    .reply(200, [])
    .post(`${REPO}/issues/${PR}/comments`)
    .reply((_uri, body) => {
      gh.comments.push((body as { body: string }).body);
      return [
        201,
        {
          id: 5000 + gh.comments.length,
          html_url: `https://github.com/Codertocat/Hello-World/pull/${PR}#issuecomment-1`,
        },
      ];
    })
    .patch(/\/issues\/comments\/\d+$/)
    .reply((_uri, body) => {
      gh.edits.push((body as { body: string }).body);
      return [200, { id: 5001, html_url: 'https://github.com/x#issuecomment-5001' }];
    })
    .post(`${REPO}/labels`)
    .reply(201, {})
    .post(`${REPO}/issues/${PR}/labels`)
    .reply((_uri, body) => {
      gh.labels.push((body as { labels: string[] }).labels);
      return [200, []];
    });
}

/** The recorded examples, pointed at the bot's pull request head (they carry another branch and no installation). */
function adapt(p: any) {
  p.installation = { id: INSTALLATION_ID };
  p.repository.default_branch = 'master';
  return p;
}
function checkRunEvent(sha = HEAD, branch = BRANCH) {
  const p = adapt(example('check_run', 'completed', (x) => x.check_run.conclusion === 'failure'));
  Object.assign(p.check_run, { head_sha: sha, name: 'test' });
  p.check_run.check_suite.head_branch = branch;
  return p;
}
function checkSuiteEvent(sha = HEAD, branch = BRANCH) {
  const p = adapt(example('check_suite', 'completed'));
  Object.assign(p.check_suite, { head_sha: sha, head_branch: branch, conclusion: 'failure' });
  return p;
}
function workflowRunEvent(sha = HEAD, branch = BRANCH) {
  const p = adapt(example('workflow_run', 'completed'));
  Object.assign(p.workflow_run, { head_sha: sha, head_branch: branch, conclusion: 'failure' });
  return p;
}
function statusEvent(state: string, sha = HEAD, branch = BRANCH) {
  const p = adapt(example('status', undefined as never, (x) => !!x.installation));
  Object.assign(p, { sha, state, context: 'ci/circleci: build' });
  p.branches = [{ name: branch, commit: { sha }, protected: false }];
  return p;
}

async function jobs() {
  return h.queue.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed']);
}

const h = useAppHarness('app-cifix', {
  extra: (queue) => {
    ciJudge = createCiJudgeQueue(queue.opts.connection, queue.opts.prefix);
    return { ciJudge };
  },
  // The app's own worker for delayed judgments, as src/app/server.ts starts it, on a connection of its own.
  setUp: (harness) => {
    judgeConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    judgeWorker = startCiJudgeWorker(
      harness.probot,
      { queue: harness.queue, redis: harness.redis, ciJudge },
      judgeConn,
      harness.queue.opts.prefix,
    );
  },
  tearDown: async () => {
    await judgeWorker.close();
    await ciJudge.obliterate({ force: true });
    await ciJudge.close();
    await judgeConn.quit();
  },
  reset: () => resetGitHub(),
});

async function resetGitHub() {
  await ciJudge.obliterate({ force: true });
  gh = {
    runs: { [HEAD]: [run('lint', 'success'), run('test', 'failure', { id: 4242 })] },
    statuses: {},
    author: 'frognano[bot]',
    config: JUDGE_NOW,
    prHead: HEAD,
    comments: [],
    edits: [],
    labels: [],
    calls: [],
  };
  fakeGitHub();
}

/** A maintainer's `/frognano …` comment `id` on the bot's pull request. */
function command(body: string, id: number) {
  const p = commentPayload(body, { issueNumber: PR, commentId: id });
  p.issue.pull_request = { url: `${API}${REPO}/pulls/${PR}` };
  return p;
}

/** What the app reads to answer commands on the pull request, as often as asked: the PR, a writer's permission. */
function nockCommandsOnPullRequest() {
  nock(API)
    .persist()
    .get(`${REPO}/pulls/${PR}`)
    .reply(200, () => pullRequest())
    .post(/\/reactions$/)
    .reply(201, {});
  nockPermission('Codertocat', 'write').persist();
}

describe('CI finished on the bot pull request', () => {
  test('a failing check on its head queues one CI-fix round for check_run + check_suite + workflow_run + a redelivery', async () => {
    const delivery = 'delivery-check-run-1';
    await receive(h.probot, 'check_run', checkRunEvent(), delivery);
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    await receive(h.probot, 'workflow_run', workflowRunEvent());
    await receive(h.probot, 'check_run', checkRunEvent(), delivery);

    const all = await jobs();
    expect(all.map((j) => j.id)).toEqual([ROUND1]);
    const data = JobDataSchema.parse(all[0]!.data);
    expect(data).toMatchObject({
      issueNumber: 1,
      trigger: 'ci',
      triggeredBy: { login: 'frognano[bot]' },
      followUp: { pullNumber: PR, headBranch: BRANCH, headSha: HEAD, baseBranch: 'master', round: 1, source: 'ci' },
      ciFix: {
        headSha: HEAD,
        streak: 1,
        omitted: 0,
        checks: [{ kind: 'check', name: 'test', id: 4242, app: 'github-actions', conclusion: 'failure' }],
      },
    });
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]).toContain('frognano: round 1 queued');
    expect(gh.comments[0]).toContain('Answering failing CI: `test`.');
  });

  test('the queued CI round keeps saying what it answers when /frognano status rewrites the comment', async () => {
    await receive(h.probot, 'check_run', checkRunEvent());
    expect(gh.comments[0]).toContain('Answering failing CI: `test`.');
    nockCommandsOnPullRequest();
    await receive(h.probot, 'issue_comment', command('/frognano status', 73));
    const rewritten = gh.edits.filter((b) => b.includes('frognano: round 1 queued'));
    expect(rewritten.length).toBeGreaterThan(0);
    for (const body of rewritten) expect(body).toContain('Answering failing CI: `test`.');
  });

  test('a delivery that fails half-way lets its redelivery start the round', async () => {
    gh.failCommit = true;
    await expect(receive(h.probot, 'check_suite', checkSuiteEvent(), 'd-fail')).rejects.toThrow();
    expect(await jobs()).toHaveLength(0);
    await receive(h.probot, 'check_suite', checkSuiteEvent(), 'd-fail');
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
  });

  test('nothing while checks still run, nothing for green CI', async () => {
    gh.runs[HEAD] = [run('lint', 'failure'), run('test', null)];
    await receive(h.probot, 'check_run', checkRunEvent());
    gh.runs[HEAD] = [run('lint', 'success'), run('test', 'success')];
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect(await jobs()).toHaveLength(0);
    expect(gh.comments).toEqual([]);
  });

  test("the bot's own approval check does not count, pending or failing", async () => {
    gh.runs[HEAD] = [
      run('lint', 'success'),
      run('frognano / human approval', 'action_required', { app: 'frognano-bot' }),
    ];
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    const own = checkRunEvent();
    own.check_run.name = 'frognano / human approval';
    await receive(h.probot, 'check_run', own);
    expect(await jobs()).toHaveLength(0);
  });

  test("nothing for a branch that is not the bot's (no REST call at all)", async () => {
    await receive(h.probot, 'check_run', checkRunEvent(HEAD, 'changes'));
    await receive(h.probot, 'status', statusEvent('failure', HEAD, 'changes'));
    expect(await jobs()).toHaveLength(0);
    expect(gh.calls).toEqual([]);
  });

  test("a person's head commit: no round, and one short note (once)", async () => {
    gh.author = 'Codertocat';
    await receive(h.probot, 'check_run', checkRunEvent());
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    gh.runs[HEAD] = [run('lint', 'failure'), run('test', 'failure', { id: 4242 })];
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect(await jobs()).toHaveLength(0);
    expect(gh.comments).toHaveLength(1);
    expect(gh.comments[0]).toMatch(/a person pushed/);
  });

  test('a check that fails on the base too: no round, and the PR is told the failure predates it', async () => {
    gh.runs[BASE] = [run('test', 'failure')];
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect(await jobs()).toHaveLength(0);
    expect(gh.comments).toEqual([
      'The failing check `test` fails on `master` too: the failure predates this pull request, so frognano starts no round for it.',
    ]);
  });

  test('nothing for a closed or merged pull request, or one a person opened from a frognano/ branch', async () => {
    gh.openPulls = []; // GitHub lists open pull requests only
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    gh.openPulls = [{ ...pullRequest(), user: { login: 'Codertocat', type: 'User' } }];
    await receive(h.probot, 'workflow_run', workflowRunEvent());
    expect(await jobs()).toHaveLength(0);
    expect(gh.comments).toEqual([]);
  });

  test('a commit status of third-party CI counts like a check', async () => {
    gh.runs[HEAD] = [];
    gh.statuses[HEAD] = [
      {
        context: 'ci/circleci: build',
        state: 'failure',
        description: 'Your tests failed on CircleCI',
        target_url: 'https://circleci.com/x',
      },
    ];
    await receive(h.probot, 'status', statusEvent('pending'));
    expect(await jobs()).toHaveLength(0);
    await receive(h.probot, 'status', statusEvent('failure'));
    const [job] = await jobs();
    expect(JobDataSchema.parse(job!.data).ciFix!.checks).toEqual([
      {
        kind: 'status',
        name: 'ci/circleci: build',
        conclusion: 'failure',
        description: 'Your tests failed on CircleCI',
        url: 'https://circleci.com/x',
      },
    ]);
  });

  test('ciFix.enabled: false in .github/frognano.yml starts nothing', async () => {
    gh.config = 'ciFix:\n  enabled: false\n  settleSeconds: 0\n';
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect(await jobs()).toHaveLength(0);
  });

  test('/frognano autofix off on the PR stops rounds; /frognano autofix on brings them back', async () => {
    nockCommandsOnPullRequest();
    await receive(h.probot, 'issue_comment', command('/frognano autofix off', 71));
    expect(gh.comments.at(-1)).toMatch(/CI fixes are off for this pull request/);
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect(await jobs()).toHaveLength(0);
    await receive(h.probot, 'issue_comment', command('/frognano autofix on', 72));
    gh.runs[HEAD] = [run('lint', 'failure'), run('test', 'failure', { id: 4242 })]; // a new failing set: a new claim
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
  });

  test('at the cap: frognano:needs-human and one comment; a round a person asks for resets the count', async () => {
    gh.config = 'ciFix:\n  maxRounds: 1\n  settleSeconds: 0\n';
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
    await (await h.queue.getJob(ROUND1))!.remove();

    // The round pushed a new head; CI fails on it again.
    const next = 'c'.repeat(40);
    gh.prHead = next;
    gh.runs[next] = [run('test', 'failure', { id: 4343 })];
    await receive(h.probot, 'check_suite', checkSuiteEvent(next));
    await receive(h.probot, 'workflow_run', workflowRunEvent(next));
    expect(await jobs()).toHaveLength(0);
    expect(gh.labels).toEqual([['frognano:needs-human']]);
    const capped = gh.comments.filter((c) => c.includes('CI still fails'));
    expect(capped).toHaveLength(1);
    expect(capped[0]).toContain('Still failing: `test`.');
    expect(capped[0]).toContain('| CI fix 1 | failing CI: `test` |');

    // A person's round takes the next number: the streak is broken, a later failure starts a round again.
    await nextAttempt(h.redis, pullRequestKey('Codertocat', 'Hello-World', PR));
    const third = 'd'.repeat(40);
    gh.prHead = third;
    gh.runs[third] = [run('test', 'failure', { id: 4444 })];
    await receive(h.probot, 'check_suite', checkSuiteEvent(third));
    expect((await jobs()).map((j) => j.id)).toEqual([`codertocat/hello-world#${PR}@3`]);
  });

  test('50 failing jobs: all named in the job (the runner shows the first few in full)', async () => {
    gh.runs[HEAD] = Array.from({ length: 50 }, (_, i) => run(`job-${i}`, 'failure', { id: 7000 + i }));
    await receive(h.probot, 'check_suite', checkSuiteEvent());
    const [job] = await jobs();
    const data = JobDataSchema.parse(job!.data);
    expect(data.ciFix!.checks).toHaveLength(50);
    expect(gh.comments[0]).toContain('(and 45 more)');
  });
});

describe('when CI is judged', () => {
  test('settleSeconds after the last completed check: a workflow that registers its checks late is seen', async () => {
    // A window well above the test's own pauses: on a loaded machine the first completion's judgment must not come
    // due before the second workflow's completion arrives.
    gh.config = 'ciFix:\n  settleSeconds: 3\n';
    await receive(h.probot, 'check_run', checkRunEvent());
    // Every check present has finished and one failed, but the window has not passed: nothing yet.
    expect(await jobs()).toHaveLength(0);
    // A second workflow registers its check, then it fails; each completion starts the window again.
    await new Promise((r) => setTimeout(r, 500));
    gh.runs[HEAD]!.push(run('e2e', null, { id: 4300 }));
    await new Promise((r) => setTimeout(r, 300));
    gh.runs[HEAD] = [run('lint', 'success'), run('test', 'failure', { id: 4242 }), run('e2e', 'failure', { id: 4300 })];
    const lastCompletion = Date.now();
    await receive(h.probot, 'workflow_run', workflowRunEvent());
    expect(await jobs()).toHaveLength(0);
    const [job] = await waitFor('the CI round', async () => {
      const all = await jobs();
      return all.length > 0 && all;
    });
    expect(Date.now() - lastCompletion).toBeGreaterThanOrEqual(2900);
    const data = JobDataSchema.parse(job!.data);
    expect(data.ciFix!.checks.map((c) => c.name).sort()).toEqual(['e2e', 'test']);
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
  });

  test('a failure that arrives while a round runs is judged again when the round ends, if the head did not move', async () => {
    await receive(h.probot, 'check_run', checkRunEvent());
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
    // While round 1 waits, a second workflow fails on the same head: nothing can start now.
    gh.runs[HEAD]!.push(run('e2e', 'failure', { id: 4300 }));
    await receive(h.probot, 'workflow_run', workflowRunEvent());
    expect(await jobs()).toHaveLength(1);
    // Round 1 ends without pushing (the runner marks it ended, then hands the failure back).
    const key = pullRequestKey('Codertocat', 'Hello-World', PR);
    await startWaitingRound(h.queue, h.redis, key, 1);
    const round1 = (await h.queue.getJob(ROUND1))!;
    await recheckCiAfterRound(ciJudge, h.redis, round1.data, pino({ level: 'silent' }));
    const round2 = await waitFor('round 2', async () => h.queue.getJob(`codertocat/hello-world#${PR}@2`));
    const data = JobDataSchema.parse(round2.data);
    expect(data.ciFix).toMatchObject({ headSha: HEAD, streak: 2 });
    expect(data.ciFix!.checks.map((c) => c.name).sort()).toEqual(['e2e', 'test']);
  });

  test('a failure handed back after a round that moved the head starts nothing', async () => {
    await receive(h.probot, 'check_run', checkRunEvent());
    gh.runs[HEAD]!.push(run('e2e', 'failure', { id: 4300 }));
    await receive(h.probot, 'workflow_run', workflowRunEvent());
    const key = pullRequestKey('Codertocat', 'Hello-World', PR);
    await startWaitingRound(h.queue, h.redis, key, 1);
    gh.prHead = 'd'.repeat(40); // round 1 pushed a new head
    gh.openPulls = [];
    const reads = gh.calls.length;
    await recheckCiAfterRound(ciJudge, h.redis, (await h.queue.getJob(ROUND1))!.data, pino({ level: 'silent' }));
    // The judgment runs (it reads the head's checks again), then finds no open pull request with that head.
    await waitFor('the judgment', async () => gh.calls.length > reads);
    await waitFor('the judgment to end', async () => {
      const c = await ciJudge.getJobCounts('waiting', 'active', 'delayed');
      return c.waiting + c.active + c.delayed === 0;
    });
    expect((await jobs()).map((j) => j.id)).toEqual([ROUND1]);
  });
});
