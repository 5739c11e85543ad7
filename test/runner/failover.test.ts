/**
 * The real runner worker (runner/worker.ts: processJob, a scripted model, the bwrap sandbox, a real git remote,
 * GitHub's API nock'd) on a Sentinel-managed Redis whose master is SIGKILLed while the model is thinking: the round
 * finishes once, with one branch push and one draft pull request, and nothing is run twice.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { ReplayBackend } from '../../src/inference/replay.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { createQueue, enqueueJob, type FrognanoQueue } from '../../src/queue/queue.js';
import type { RedisTarget } from '../../src/queue/redisConfig.js';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { haveRedisTools, kill9, startSentinelGroup, stopAll, waitFor } from '../support/redisServers.js';
import type { SentinelGroup } from '../support/redisServers.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

const run = haveRedisTools() ? describe : describe.skip;
const NAME = 'fnrunner';
const REPO = 'greeter';
const prefix = `fn-failover-${randomUUID().slice(0, 8)}`;
let group: SentinelGroup;
let remote: BareRemote | undefined;
let runner: RunnerWorker | undefined;
let queue: FrognanoQueue | undefined;
const clients: Redis[] = [];
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  if (haveRedisTools()) group = await startSentinelGroup(NAME);
}, 60_000);

afterAll(async () => {
  await runner?.shutdown(1000);
  await queue?.close();
  for (const c of clients) c.disconnect();
  for (const c of cleanups) await c();
  await remote?.cleanup();
  await stopAll();
  nock.cleanAll();
  nock.enableNetConnect();
  nock.restore(); // give later test files in this worker an unpatched http module
}, 30_000);

run('the runner across a Sentinel failover', () => {
  test('kill -9 of the master mid-round: the round finishes once, one push, one draft PR', async () => {
    const target: RedisTarget = { mode: 'sentinel', sentinels: group.sentinelAddresses, name: NAME, tls: false };
    const connect = () => {
      // As runner/service.ts makes them: commands wait through the failover.
      const c = createRedisConnection(target);
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    };
    const owner = uniqueOwner('fo');
    remote = await makeBareRemote(owner, REPO, { 'hello.txt': 'hi\n' });
    const gh = recordGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    const redis = connect();
    const ctx = await runnerContext({
      redis,
      remote,
      logger: captureLogs().logger,
      backend: ReplayBackend.fromTurns([
        // The model thinks for 5 s: the master dies meanwhile.
        {
          content: '',
          delay_ms: 5000,
          tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hello\n' } }],
        },
        { content: 'Fixed the greeting.', tool_calls: [] },
      ]),
    });
    cleanups.push(ctx.cleanup);
    queue = createQueue(connect(), { prefix });
    queue.on('error', () => undefined);
    runner = createRunnerWorker({ connection: connect(), subscriber: connect(), prefix, ctx, lockDurationMs: 30_000 });
    const picked: string[] = [];
    runner.worker.on('active', (job) => picked.push(job.id!));
    let stalled = 0;
    runner.worker.on('stalled', () => (stalled += 1));
    runner.worker.on('error', () => undefined);

    const { job } = await enqueueJob(queue, jobData(owner, REPO));
    await waitFor('the model turn to start', async () => gh.statusBodies().some((b) => b.includes('Turn 1')), 30_000);
    const killedAt = Date.now();
    await kill9(group.master);
    await waitFor(
      'the sentinels to promote the replica',
      async () => (await group.masterPort()) === group.replica.port,
      30_000,
    );
    const promotedMs = Date.now() - killedAt;

    await waitFor('the round to finish', async () => (await queue!.getJob(job.id!))?.finishedOn !== undefined, 60_000);
    const done = (await queue.getJob(job.id!))!;
    expect(await done.getState()).toBe('completed');
    expect(done.returnvalue).toMatchObject({ outcome: 'pull_request', branch: 'frognano/issue-7' });
    expect(picked).toEqual([job.id]);
    expect(stalled).toBe(0);
    expect(gh.find('POST', `/repos/${owner}/${REPO}/pulls`)).toHaveLength(1);
    const head = gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-7').trim();
    expect(gitIn(remote.bare, 'show', `${head}:hello.txt`)).toBe('hello\n');
    expect(gitIn(remote.bare, 'rev-list', '--count', `main..${head}`).trim()).toBe('1');
    console.log(
      `runner across a failover: replica promoted ${promotedMs} ms after kill -9; round finished once, one draft PR`,
    );
  }, 120_000);
});
