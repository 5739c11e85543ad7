import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { ReplayBackend } from '../../src/inference/replay.js';
import { jobIdFor, type JobData } from '../../src/queue/schema.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { OFF_ON_RUNNER } from '../../src/runner/verifyStep.js';
import type { Verdict } from '../../src/verify/types.js';
import { trajectoryStoreFromEnv } from '../../src/runs/config.js';
import type { TrajectoryStore } from '../../src/runs/trajectoryStore.js';
import { makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { useRedisAndNock } from './redisAndNock.js';
import { followUpOn } from './rounds.js';
import { recordGitHub } from './githubRecorder.js';
import { recordPullRequest } from './pullRequestRecorder.js';

/**
 * Issue #21: every round is stored where the app serves its page, and the pull request, the approval check's details
 * and the status comment link that page; a follow-up round is the next round of the same run.
 */
const REPO = 'widgets';
const BRANCH = 'frognano/issue-7';
const PUBLIC = 'https://frognano.example.com';
const replay = (content: string) =>
  ReplayBackend.fromTurns([
    { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content } }] },
    { content: 'Wrote the greeting.', tool_calls: [] },
  ]);

describe('run pages from the runner', () => {
  let redis: Redis;
  let remote: BareRemote;
  let owner: string;
  let storeDir: string;
  let store: TrajectoryStore;
  let ctx: RunnerContext & { cleanup(): Promise<void> };

  useRedisAndNock((r) => (redis = r));
  beforeEach(async () => {
    storeDir = await mkdtemp(path.join(os.tmpdir(), 'fn-runs-'));
    store = trajectoryStoreFromEnv({ FROGNANO_TRAJECTORY_STORE: storeDir });
  });
  afterEach(async () => {
    nock.cleanAll();
    await remote?.cleanup();
    await ctx?.cleanup();
    await rm(storeDir, { recursive: true, force: true });
  });

  const handle = (data: JobData) => ({ id: jobIdFor(data), data, updateProgress: async () => undefined });

  it('a first attempt stores round 0 and links it from the PR body, the check run and the status comment', async () => {
    owner = uniqueOwner('rp');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    const base = await runnerContext({ redis, remote, backend: replay('hello\n'), logger: captureLogs().logger });
    ctx = Object.assign(base, { trajectoryStore: store, publicUrl: PUBLIC });
    const gh = recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const result = await processJob(handle(jobData(owner, REPO)), ctx, new AbortController().signal);

    expect(result).toMatchObject({ outcome: 'pull_request', branch: BRANCH });
    const url = `${PUBLIC}/runs/${owner}/${REPO}/7/0`;
    const rounds = await store.listRounds({ owner, repo: REPO, issueNumber: 7 });
    expect(rounds.map((r) => ({ round: r.round, kind: r.kind }))).toEqual([{ round: 0, kind: 'draft' }]);
    const stored = await store.getRound({ owner, repo: REPO, issueNumber: 7, round: 0 });
    expect(stored?.patch).toContain('+hello');
    expect(stored?.trajectory.final_message).toBe('Wrote the greeting.');

    const prBody = (gh.find('POST', '/pulls')[0]!.body as { body: string }).body;
    expect(prBody).toContain(url);
    const check = gh.find('POST', '/check-runs')[0]!.body as { details_url: string };
    expect(check.details_url).toBe(url);
    const comments = gh.calls.filter((c) => /\/comments/.test(c.path) && c.method !== 'GET');
    expect(JSON.stringify(comments.at(-1)!.body)).toContain(url);
  });

  it('a follow-up round is the next round of the same run, linked from the run history', async () => {
    owner = uniqueOwner('rp');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    const logger = captureLogs().logger;
    const firstCtx = Object.assign(await runnerContext({ redis, remote, backend: replay('hello\n'), logger }), {
      trajectoryStore: store,
      publicUrl: PUBLIC,
    });
    recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const first = await processJob(handle(jobData(owner, REPO)), firstCtx, new AbortController().signal);
    await firstCtx.cleanup();
    expect(first).toMatchObject({ outcome: 'pull_request', branch: BRANCH });
    nock.cleanAll();

    const base = await runnerContext({ redis, remote, backend: replay('Hello, world\n'), logger });
    ctx = Object.assign(base, { trajectoryStore: store, publicUrl: PUBLIC });
    const pr = recordPullRequest(remote, owner, REPO, { number: 5, head: BRANCH, base: 'main' });
    const gh = recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const followUp = followUpOn(remote, BRANCH);
    const data = jobData(owner, REPO, { trigger: 'comment', triggeredBy: { login: 'maint', id: 1 }, followUp });
    const result = await processJob(handle(data), ctx, new AbortController().signal);

    expect(result).toMatchObject({ outcome: 'pull_request', pullRequestNumber: 5 });
    const rounds = await store.listRounds({ owner, repo: REPO, issueNumber: 7 });
    expect(rounds.map((r) => ({ round: r.round, kind: r.kind }))).toEqual([
      { round: 0, kind: 'draft' },
      { round: 1, kind: 'follow-up' },
    ]);
    expect(rounds[1]!.pullNumber).toBe(5);
    const url = `${PUBLIC}/runs/${owner}/${REPO}/7/1`;
    expect(pr.body()).toContain(url);
    const check = gh.find('POST', '/check-runs')[0]!.body as { details_url: string };
    expect(check.details_url).toBe(url);
  });

  it("stores the verify step's outcome with the round, for the page's Verification section", async () => {
    owner = uniqueOwner('rp');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    const base = await runnerContext({ redis, remote, backend: replay('hello\n'), logger: captureLogs().logger });
    const never = async (): Promise<Verdict> => {
      throw new Error('verification is off: the verifier is never called');
    };
    ctx = Object.assign(base, { trajectoryStore: store, publicUrl: PUBLIC, verifyOff: true, verifyChange: never });
    recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const result = await processJob(handle(jobData(owner, REPO)), ctx, new AbortController().signal);

    expect(result).toMatchObject({ outcome: 'pull_request' });
    const stored = await store.getRound({ owner, repo: REPO, issueNumber: 7, round: 0 });
    expect(stored?.verification).toEqual({ state: 'off', reason: OFF_ON_RUNNER });
  });

  it('without a store nothing is linked and the round still publishes', async () => {
    owner = uniqueOwner('rp');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    ctx = await runnerContext({ redis, remote, backend: replay('hello\n'), logger: captureLogs().logger });
    const gh = recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const result = await processJob(handle(jobData(owner, REPO)), ctx, new AbortController().signal);
    expect(result).toMatchObject({ outcome: 'pull_request' });
    expect(JSON.stringify(gh.calls.map((c) => c.body))).not.toContain('/runs/');
  });
});
