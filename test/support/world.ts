/**
 * One end-to-end world for the runner's rounds: the Probot app on real webhook payloads, Redis under a unique prefix
 * (in this jest worker's database), the BullMQ queue and a real runner worker, a real bare git remote, the scripted
 * model and the bubblewrap sandbox; only GitHub's REST API is a stand-in (nock), answering from the repository's
 * state: the bot's pull request (its head read from the bare remote), check runs per commit, comments, the compare
 * API. A scenario reads like the product's story:
 *
 *   const world = await createWorld({ name: 'e2e-x', files: { 'README.md': '…' }, turns: [...] });
 *   await world.label();                         // issues.labeled -> the first round
 *   const draft = await world.round('codertocat/hello-world#1@1');
 *   await world.review({ ... });                 // pull_request_review with /frognano -> a follow-up round
 *   world.head();                                // the branch's commit in the bare remote
 *   await world.close();
 *
 * Each test file adds the REST answers that are its subject (an issue's text, a review's inline comments, a CI job's
 * log) with `nock(API)` after createWorld; those routes do not overlap the world's.
 */
import nock from 'nock';
import { handleReviewSubmitted, type ReviewDecision } from '../../src/app/review.js';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { createHarness, labeledPayload, receive, type Harness } from '../app/helpers.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, runnerContext } from '../runner/fixtures.js';
import { API, recordGitHub } from '../runner/githubRecorder.js';
import { recordPullRequest } from '../runner/pullRequestRecorder.js';
import { waitForJob } from './waitFor.js';
import { createRedisConnection } from '../../src/queue/connection.js';

export { API };

/** The repository of @octokit/webhooks-examples' payloads, which the world's webhooks come from. */
export const OWNER = 'Codertocat';
export const REPO = 'Hello-World';
export const INSTALLATION_ID = 4242;

/** A scripted model turn that edits one file (the Edit tool), with no text. */
export function editTurn(file_path: string, old_string: string, new_string: string): ReplayTurn {
  return { content: '', tool_calls: [{ name: 'Edit', arguments: { file_path, old_string, new_string } }] };
}

/** The repository's README that the example issue (Codertocat/Hello-World#1) is about: "comitt". */
export const README = '# Hello World\n\nRemember to comitt often.\n';

/** The first attempt on the example issue (Codertocat/Hello-World#1): the README's "comitt" spelled right. */
export const SPELLING_FIX: ReplayTurn[] = [
  editTurn('README.md', 'comitt', 'commit'),
  { content: 'Fixed the spelling of "commit".', tool_calls: [] },
];

export interface WorldOptions {
  /** Names the Redis prefix (made unique) and the logs. */
  name: string;
  /** The repository on its base branch, and more branches with their files on top of it. */
  files: Record<string, string>;
  base?: string;
  branches?: Record<string, Record<string, string>>;
  /** The scripted model's turns, across all rounds in order. */
  turns: ReplayTurn[];
  /** The sandbox the rounds run in: bubblewrap, the real isolation of a runner without Docker. */
  sandbox?: 'bwrap';
  /** The bot's pull request as GitHub keeps it, when the scenario has one (or will open one). */
  pullRequest?: { number: number; head: string; permissions?: Record<string, string> };
  /** Check runs kept per commit (created, listed, updated), CI's and the bot's approval check. */
  checks?: boolean;
  /** The approval gate beside the app's handlers, as src/app/server.ts loads it. */
  approvalGate?: boolean;
  /** Start the runner worker at once (default); false: `startRunner()` later. */
  runner?: boolean;
}

export type World = Awaited<ReturnType<typeof createWorld>>;

export async function createWorld(o: WorldOptions) {
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1'); // local servers of a test (a log download); GitHub stays the stand-in
  const h = await createHarness(o.name);
  const decisions: ReviewDecision[] = [];
  if (o.approvalGate) {
    await h.probot.load((app) => {
      app.on('pull_request_review.submitted', async (c) => void decisions.push(await handleReviewSubmitted(c)));
    });
  }
  const base = o.base ?? 'master';
  const remote = await makeBareRemote(OWNER, REPO, o.files, { branch: base, extraBranches: o.branches });
  const token = fakeInstallationToken();
  const prNumber = o.pullRequest?.number ?? 5;
  // Registered before recordGitHub so that the pull request's and the check runs' routes win.
  const pr = o.pullRequest
    ? recordPullRequest(remote, OWNER, REPO, { ...o.pullRequest, base, permissions: o.pullRequest.permissions })
    : undefined;
  const checks = o.checks ? checkRunStore(remote, { base, pr: prNumber, head: o.pullRequest?.head }) : undefined;
  const gh = recordGitHub(OWNER, REPO, { token, installationId: INSTALLATION_ID, prNumber });
  const logs = captureLogs();
  const ctx = await runnerContext({
    redis: h.redis, // the app's connection (same key prefix): one status comment, found through the shared cache
    remote,
    logger: logs.logger,
    backend: ReplayBackend.fromTurns(o.turns),
  });
  const workerConn = createRedisConnection(process.env.REDIS_URL);
  const subscriber = createRedisConnection(process.env.REDIS_URL);
  let runner: RunnerWorker | undefined;
  const startRunner = () => {
    runner ??= createRunnerWorker({
      connection: workerConn,
      subscriber,
      prefix: h.queue.opts.prefix,
      ctx,
      lockDurationMs: 30_000,
    });
    return runner;
  };
  if (o.runner !== false) startRunner();
  return {
    ...stage(h),
    remote,
    token,
    gh,
    pr,
    checks,
    logs,
    decisions,
    startRunner,
    /** The next round's end: job `jobId` (`owner/repo#number@attempt`) completed or failed. */
    round: (jobId: string, timeoutMs = 60_000) => waitForJob(h.queue, jobId, timeoutMs),
    /** The commit `branch` points at in the bare remote (default: the pull request's head branch). */
    head: (branch = o.pullRequest?.head ?? `frognano/issue-1`) =>
      gitIn(remote.bare, 'rev-parse', `refs/heads/${branch}`).trim(),
    close: async () => {
      await runner?.shutdown(1000);
      await h.close();
      await Promise.all([workerConn.quit(), subscriber.quit()]);
      await remote.cleanup();
      await ctx.cleanup();
      nock.cleanAll();
      nock.enableNetConnect();
      nock.restore(); // give later test files in this worker an unpatched http module
    },
  };
}

/** What GitHub sends the app: webhooks, each a real example payload. */
function stage(h: Harness) {
  return {
    probot: h.probot,
    queue: h.queue,
    redis: h.redis,
    /** Any webhook; `id` repeats a delivery. */
    receive: (name: string, payload: unknown, id?: string) => receive(h.probot, name, payload, id),
    /** issues.labeled with the bot's label (the example's issue #1 unless `payload` says otherwise). */
    label: (payload: unknown = labeledPayload()) => receive(h.probot, 'issues', payload),
    /** issue_comment.created, e.g. `/frognano …` on a pull request (see commentOnPullRequest in test/app/helpers). */
    comment: (payload: unknown) => receive(h.probot, 'issue_comment', payload),
    /** pull_request_review.submitted. */
    review: (payload: unknown) => receive(h.probot, 'pull_request_review', payload),
    jobCounts: () => h.queue.getJobCounts('waiting', 'active', 'completed', 'failed'),
  };
}

interface CheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string;
  external_id?: string;
  output?: { title?: string };
  app: { slug: string };
}

/**
 * Check runs as GitHub keeps them: created per head (the bot's), set by the test (CI's), listed per commit (latest
 * first, by check_name), updated by id; with the commit status, the open pull request list and a commit's author
 * and committer read from the bare remote.
 */
function checkRunStore(remote: BareRemote, o: { base: string; pr: number; head?: string }) {
  const R = `/repos/${OWNER}/${REPO}`;
  const runs: CheckRun[] = [];
  const body = (b: unknown) => (typeof b === 'string' ? JSON.parse(b) : b) as object;
  nock(API)
    .persist()
    .post(`${R}/check-runs`)
    .reply((_uri, b) => {
      const run = { ...body(b), id: 900 + runs.length, app: { slug: 'frognano-bot' } } as CheckRun;
      runs.push(run);
      return [201, { id: run.id }];
    })
    .get(/\/commits\/[0-9a-f]{40}\/check-runs/)
    .query(true)
    .reply((uri) => {
      const sha = /commits\/([0-9a-f]{40})\//.exec(uri)![1];
      const name = new URL(uri, API).searchParams.get('check_name');
      const mine = runs.filter((r) => r.head_sha === sha && (!name || r.name === name)).reverse();
      return [200, { total_count: mine.length, check_runs: mine }];
    })
    .patch(/\/check-runs\/\d+$/)
    .reply((uri, b) => {
      const run = runs.find((r) => r.id === Number(uri.split('/').pop()));
      if (!run) return [404, { message: 'Not Found' }];
      Object.assign(run, body(b));
      return [200, { id: run.id }];
    })
    .get(/\/commits\/[0-9a-f]{40}\/status/)
    .query(true)
    .reply(200, { state: 'success', statuses: [] })
    .get(`${R}/pulls`)
    .query(true)
    .reply(() => [200, o.head ? [openPullRequest(remote, { ...o, head: o.head })] : []])
    .get(new RegExp(`^${R}/commits/[0-9a-f]{40}$`))
    .reply((uri) => {
      const [author, committer] = gitIn(remote.bare, 'log', '-1', '--format=%an%n%cn', uri.split('/').pop()!)
        .trim()
        .split('\n');
      return [200, { commit: { author: { name: author }, committer: { name: committer } } }];
    });
  return {
    /** CI's check runs on `sha`, as GitHub Actions would report them. */
    ci: (sha: string, list: { id: number; name: string; conclusion: string }[]) =>
      runs.push(...list.map((r) => ({ ...r, head_sha: sha, status: 'completed', app: { slug: 'github-actions' } }))),
    /** The latest check run on `sha`, whatever its name. */
    latest: (sha: string) => runs.filter((r) => r.head_sha === sha).at(-1),
    /** The latest of the bot's approval checks on `sha`. */
    approval: (sha: string) => runs.filter((r) => r.head_sha === sha && r.name === 'frognano / human approval').at(-1),
  };
}

/** The bot's pull request as GET /pulls lists it, its head and base read from the bare remote. */
function openPullRequest(remote: BareRemote, o: { base: string; pr: number; head: string }) {
  const full_name = `${OWNER}/${REPO}`;
  return {
    number: o.pr,
    state: 'open',
    html_url: `https://github.com/${full_name}/pull/${o.pr}`,
    user: { login: 'frognano[bot]', type: 'Bot' },
    body: '',
    head: { ref: o.head, sha: gitIn(remote.bare, 'rev-parse', `refs/heads/${o.head}`).trim(), repo: { full_name } },
    base: { ref: o.base, sha: gitIn(remote.bare, 'rev-parse', `refs/heads/${o.base}`).trim(), repo: { full_name } },
  };
}
