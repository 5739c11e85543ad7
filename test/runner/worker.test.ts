import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { ProbotOctokit } from 'probot';
import nock from 'nock';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { cancelKey, requestCancel } from '../../src/queue/cancel.js';
import { currentAttempt } from '../../src/queue/attempts.js';
import { enqueueFollowUp, pullRequestKey } from '../../src/queue/followUps.js';
import { createQueue, enqueueJob, type FrognanoQueue } from '../../src/queue/queue.js';
import { QUEUE_NAME, jobIdFor } from '../../src/queue/schema.js';
import { STALLED_FAILED_REASON, stalledFailureText } from '../../src/queue/stalled.js';
import { upsertStatusComment } from '../../src/github/statusComment.js';
import { statusOfJob } from '../../src/app/jobStatus.js';
import { FrognanoMetrics } from '../../src/ops/metrics.js';
import { tenantOf } from '../../src/queue/fairShare/tenants.js';
import { runnerSecondsUsed } from '../../src/queue/quotas/store.js';
import { admitRun } from '../../src/queue/quotas/check.js';
import { heldSeconds, releaseHold } from '../../src/queue/quotas/holds.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner, waitFor } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REPO = 'greeter';
const SLOW: ReplayTurn[] = [{ content: 'thinking…', delay_ms: 30_000, tool_calls: [] }];
const FIX: ReplayTurn[] = [
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hello\n' } }] },
  { content: 'Fixed the greeting.', tool_calls: [] },
];

describe('runner worker', () => {
  const prefix = `fn-e-worker-${randomUUID().slice(0, 8)}`;
  let redis: Redis;
  let conn: Redis;
  let subscriber: Redis;
  let queue: FrognanoQueue;
  let remote: BareRemote;
  let owner: string;
  let gh: ReturnType<typeof recordGitHub>;
  const runners: RunnerWorker[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    subscriber = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    queue = createQueue(conn, { prefix });
  });
  beforeEach(async () => {
    owner = uniqueOwner('wk');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    gh = recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
  });
  afterEach(async () => {
    for (const r of runners.splice(0)) await r.shutdown(500);
    for (const c of cleanups.splice(0)) await c();
    gh.done();
    await remote.cleanup();
    await redis.del(`frognano:status:${owner.toLowerCase()}/${REPO}#7`);
  });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    await Promise.all([redis.quit(), conn.quit(), subscriber.quit()]);
    nock.enableNetConnect();
    nock.restore(); // give later test files in this worker an unpatched http module
  });

  async function startRunner(
    turns: ReplayTurn[],
    metrics?: FrognanoMetrics,
    stalls: { stalledIntervalMs?: number; maxStalledCount?: number } = {},
  ) {
    const ctx = await runnerContext({
      redis,
      remote,
      backend: ReplayBackend.fromTurns(turns),
      logger: captureLogs().logger,
    });
    ctx.metrics = metrics;
    cleanups.push(ctx.cleanup);
    const r = createRunnerWorker({ connection: conn, subscriber, prefix, ctx, lockDurationMs: 10_000, ...stalls });
    runners.push(r);
    return r;
  }

  const state = async (id: string) => (await queue.getJob(id))?.getState();

  /** A runner takes the job, says so on the issue, and dies: its lock (1 s) is never renewed. */
  async function dieWhileRunning(id: string) {
    const deadConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const dead = new Worker(QUEUE_NAME, null, { connection: deadConn, prefix, autorun: false, lockDuration: 1000 });
    expect((await dead.getNextJob('dead-runner', { block: false }))?.id).toBe(id);
    await dead.close();
    await deadConn.quit();
    const octokit = new ProbotOctokit({
      auth: { token: fakeInstallationToken() },
      retry: { enabled: false },
      throttle: { enabled: false },
    });
    await upsertStatusComment(
      octokit,
      redis,
      { owner, repo: REPO, issueNumber: 7 },
      { kind: 'running', turn: 3, maxTurns: 100 },
    );
    // Earlier runners (stalledInterval 60 s) leave BullMQ's per-queue stall-check throttle key behind.
    await redis.del(`${prefix}:${QUEUE_NAME}:stalled-check`);
  }

  it('stops a running job when a maintainer cancels it (/frognano cancel)', async () => {
    const runner = await startRunner(SLOW);
    const { job } = await enqueueJob(queue, jobData(owner, REPO));
    await waitFor('the job to start', async () => runner.activeJobs().includes(job.id!));
    await waitFor('the model turn', async () => gh.statusBodies().some((b) => b.includes('Turn 1')));
    await requestCancel(redis, job.id!, 'maint');
    await waitFor('the job to finish', async () => (await state(job.id!)) === 'completed');
    expect((await queue.getJob(job.id!))!.returnvalue).toMatchObject({ outcome: 'cancelled' });
    expect(gh.statusBodies().at(-1)).toContain('Cancelled by @maint');
    await redis.del(cancelKey(job.id!));
  });

  it('on shutdown, hands an active job back to the queue; another runner finishes it', async () => {
    const first = await startRunner(SLOW);
    const tenant = tenantOf({ owner, repo: REPO });
    const quotas = parseQuotasFile('defaults: { holdSecondsPerRun: 900 }\n', 'q.yaml');
    const admitted = {
      jobId: jobIdFor({ owner, repo: REPO, issueNumber: 7, attempt: 1 }),
      jobKeyPrefix: queue.toKey(''),
    };
    expect(await admitRun(redis, quotas, tenant, admitted)).toBeNull();
    const { job } = await enqueueJob(queue, jobData(owner, REPO));
    const id = job.id!;
    expect(id).toBe(admitted.jobId);
    await waitFor('the job to start', async () => first.activeJobs().includes(id));
    await waitFor('the model turn', async () => gh.statusBodies().some((b) => b.includes('Turn 1')));

    const started = Date.now();
    await first.shutdown(300); // grace period over at once: the job is aborted and handed back
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await state(id)).toBe('waiting');
    expect(gh.statusBodies().at(-1)).toContain('queued');
    // Handed back, the job has not ended: it keeps its hold for the run that finishes it.
    expect((await heldSeconds(redis, tenant)).jobs).toEqual([id]);
    runners.splice(runners.indexOf(first), 1);

    const metrics = new FrognanoMetrics({ defaultMetrics: false });
    await startRunner(FIX, metrics);
    await waitFor('the job to finish on the second runner', async () => (await state(id)) === 'completed');
    const exposition = (await metrics.render()).body;
    expect(exposition).toContain('frognano_jobs_completed_total{outcome="pull_request"} 1');
    expect(exposition).toMatch(/frognano_model_tokens_total\{backend="replay",kind="completion"\} \d+/);
    expect(exposition).toContain('frognano_turns_per_job_count 1');
    const installation = owner.toLowerCase();
    expect(exposition).toContain(`frognano_installation_runs_total{installation="${installation}"} 1`);
    expect(exposition).toMatch(
      new RegExp(`frognano_installation_generated_tokens_total\\{installation="${installation}"\\} [1-9]`),
    );
    // The runner-seconds ledger counts both runners' time on the job (the handed-back run held a runner too).
    const used = await runnerSecondsUsed(redis, tenant, 'day');
    expect(used.repository).toBeGreaterThan(0);
    // The handed-back run did not end the job: its hold stayed until the second runner finished it (settled).
    expect((await heldSeconds(redis, tenant)).jobs).toEqual([]);
    expect(used.installation).toBe(used.repository);
    expect((await queue.getJob(id))!.returnvalue).toMatchObject({
      outcome: 'pull_request',
      branch: 'frognano/issue-7',
    });
    expect(gitIn(remote.bare, 'show', 'refs/heads/frognano/issue-7:hello.txt')).toBe('hello\n');
    expect(gh.statusBodies().at(-1)).toContain('draft pull request #5 opened');
  });

  it('records the reason of a failed job', async () => {
    const metrics = new FrognanoMetrics({ defaultMetrics: false });
    await startRunner(FIX, metrics);
    const { job } = await enqueueJob(queue, jobData(owner, 'missing-repo'));
    const other = recordGitHub(owner, 'missing-repo', { token: fakeInstallationToken(), installationId: 4242 });
    await waitFor('the job to fail', async () => (await state(job.id!)) === 'failed');
    const failed = (await queue.getJob(job.id!))!;
    // The reason the app shows on the issue (it reads failedReason): public words and where to look.
    expect(failed.failedReason).toBe(
      `Could not clone the repository (branch \`main\`). Check that the branch exists and that the app can read the repository. The runner's log has the details (job \`${job.id}\`).`,
    );
    expect(failed.attemptsMade).toBe(1);
    expect(other.statusBodies().at(-1)).toContain('Could not clone the repository (branch `main`).');
    expect((await metrics.render()).body).toContain('frognano_jobs_failed_total{reason="clone"} 1');
    await redis.del(`frognano:status:${owner.toLowerCase()}/missing-repo#7`);
  });

  it('when BullMQ gives up on a job that stalled (its runner died), the status comment says failed and why', async () => {
    const { job } = await enqueueJob(queue, jobData(owner, REPO));
    const id = job.id!;
    await dieWhileRunning(id);
    expect(gh.statusBodies().at(-1)).toContain('working on it');

    // A live runner that tolerates no stall: BullMQ fails the job itself; processJob never runs for it.
    const metrics = new FrognanoMetrics({ defaultMetrics: false });
    await startRunner(FIX, metrics, { stalledIntervalMs: 500, maxStalledCount: 0 });
    await waitFor('the job to fail', async () => (await state(id)) === 'failed');
    const failed = (await queue.getJob(id))!;
    expect(failed.failedReason).toBe(STALLED_FAILED_REASON);
    await waitFor('the status comment', async () => gh.statusBodies().at(-1)?.includes('stopped responding'));

    const last = gh.statusBodies().at(-1)!;
    expect(last).toContain('frognano: failed');
    expect(last).toContain('The runner stopped responding 1 time while working on this issue');
    expect(last).toContain('`/frognano retry`');
    // The same comment was edited: one comment per issue.
    expect(gh.find('POST', `/repos/${owner}/${REPO}/issues/7/comments`)).toHaveLength(1);
    expect(gh.find('POST', `/repos/${owner}/${REPO}/pulls`)).toHaveLength(0);
    expect((await metrics.render()).body).toContain('frognano_jobs_failed_total{reason="stalled"} 1');
    // `/frognano status` in the app reads the same reason from the failed job, instead of BullMQ's wording.
    expect(await statusOfJob(queue, redis, failed)).toEqual({ kind: 'failed', reason: stalledFailureText(1) });
  });

  it("a crashed job's quota hold does not outlive it: BullMQ gives up on the job, the hold goes", async () => {
    const cfg = parseQuotasFile('defaults: { runnerSecondsPerDay: 3600, holdSecondsPerRun: 3600 }\n', 'q.yaml');
    const tenant = tenantOf({ owner, repo: REPO });
    const admit = (jobId: string) => admitRun(redis, cfg, tenant, { jobId, jobKeyPrefix: queue.toKey('') });
    const id = jobIdFor({ owner, repo: REPO, issueNumber: 7, attempt: 1 });
    expect(await admit(id)).toBeNull();
    await enqueueJob(queue, jobData(owner, REPO));
    // The job's hold fills the day: nothing else starts while it lives.
    expect(await admit('other@1')).toMatchObject({ quota: 'runnerSecondsPerDay', inFlight: 3600 });
    await dieWhileRunning(id);
    expect((await heldSeconds(redis, tenant)).jobs).toEqual([id]);

    await startRunner(FIX, undefined, { stalledIntervalMs: 500, maxStalledCount: 0 });
    await waitFor('the job to fail', async () => (await state(id)) === 'failed');
    await waitFor('the hold to go', async () => (await heldSeconds(redis, tenant)).jobs.length === 0);
    // No runner-seconds are charged for it (the dead runner's time is unknown); the day is free again.
    expect((await runnerSecondsUsed(redis, tenant, 'day')).installation).toBe(0);
    expect(await admit('other@1')).toBeNull();
    // Had no runner been there to release it, the next admission sweeps it: BullMQ marks the job finished.
    expect(await redis.hexists(queue.toKey(id), 'finishedOn')).toBe(1);
    await releaseHold(redis, tenant, 'other@1');
    await waitFor('the status comment', async () => gh.statusBodies().at(-1)?.includes('stopped responding'));
  });

  it('a job given up after stalling that a maintainer had cancelled reads as cancelled', async () => {
    const { job } = await enqueueJob(queue, jobData(owner, REPO));
    const id = job.id!;
    await dieWhileRunning(id);
    await requestCancel(redis, id, 'maint');
    try {
      await startRunner(FIX, undefined, { stalledIntervalMs: 500, maxStalledCount: 0 });
      await waitFor('the job to fail', async () => (await state(id)) === 'failed');
      await waitFor('the status comment', async () => gh.statusBodies().at(-1)?.includes('cancelled'));
      expect(gh.statusBodies().at(-1)).toContain('Cancelled by @maint');
    } finally {
      await redis.del(cancelKey(id));
    }
  });

  it('when BullMQ gives up on a stalled follow-up round, the asks that waited for it start the next round', async () => {
    const ask = (commentId: number, feedback: string) => ({
      ...jobData(owner, REPO, { trigger: 'comment', commentId }),
      followUp: {
        pullNumber: 5,
        headBranch: 'frognano/issue-7',
        headSha: 'a'.repeat(40),
        baseBranch: 'main',
        feedback,
        inlineComments: [],
        omittedComments: 0,
        source: 'comment' as const,
      },
    });
    const first = await enqueueFollowUp(queue, redis, ask(1, 'greet properly'));
    expect(await enqueueFollowUp(queue, redis, ask(2, 'and add a test'))).toMatchObject({ kind: 'waiting', round: 1 });
    const id = first.kind === 'queued' ? first.job.id! : '';
    await dieWhileRunning(id);
    const runner = await startRunner(FIX, undefined, { stalledIntervalMs: 500, maxStalledCount: 0 });
    await waitFor('round 1 to fail', async () => (await state(id)) === 'failed');
    const next = await waitFor('round 2', async () => queue.getJob(id.replace(/@1$/, '@2')));
    expect(next.data).toMatchObject({ commentId: 2, followUp: { round: 2, feedback: 'and add a test' } });
    expect(await currentAttempt(redis, pullRequestKey(owner, REPO, 5))).toBe(2);
    await runner.shutdown(300); // round 2 itself is not this test's business
    runners.splice(runners.indexOf(runner), 1);
    await queue.remove(next.id!).catch(() => undefined);
    await redis.del(`frognano:status:${owner.toLowerCase()}/${REPO}#5`);
  });
});
