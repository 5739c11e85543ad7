/**
 * The runner with the production sandbox: a BullMQ job in Redis -> a real runner worker -> host clone -> the
 * model's tools and the repository's tests run in a Docker container (frognano-sandbox image, no network) ->
 * branch pushed to a real bare repository -> draft PR. (The webhook -> queue half is endToEnd.test.ts.)
 * GitHub's API is a local HTTP stand-in, not nock: with nock active, even passing requests through, writes to
 * the Docker engine's hijacked exec streams fail with EPIPE, so this file never loads nock.
 */
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { Redis } from 'ioredis';
import { ReplayBackend } from '../../src/inference/replay.js';
import { createInstallationAccess } from '../../src/github/client.js';
import { createQueue, enqueueJob, type FrognanoQueue } from '../../src/queue/queue.js';
import { createSandbox, SandboxConfigSchema } from '../../src/sandbox/index.js';
import { reapStaleSandboxes } from '../../src/sandbox/docker/index.js';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { startLocalGitHub } from './localGitHub.js';
import { waitForJob } from '../support/waitFor.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const docker = await dockerForTests();
const describeDocker = docker ? describe : describe.skip;

// What the model's first command reports from inside the container: who it runs as, whether any network
// interface besides loopback exists, and whether the clone's token or remote reached the workspace.
const PROBE =
  'id -u; ls /sys/class/net | tr "\\n" " "; echo; env | grep -ci token; cat .git/config; git remote -v; echo probe-done';

describeDocker('queue -> runner worker -> docker sandbox -> draft pull request', () => {
  const prefix = `fn-e-docker-${randomUUID().slice(0, 8)}`;
  const owner = uniqueOwner('dk');
  let redis: Redis;
  let queue: FrognanoQueue;
  let gh: Awaited<ReturnType<typeof startLocalGitHub>> | undefined;
  let remote: BareRemote | undefined;
  let runner: RunnerWorker | undefined;
  let workerConn: Redis;
  let subscriber: Redis;
  let ctx: Awaited<ReturnType<typeof runnerContext>> | undefined;
  let jobId = '';

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    queue = createQueue(redis, { prefix });
    workerConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    subscriber = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await runner?.shutdown(1000);
    if (jobId) await reapStaleSandboxes(docker!, 0, { labels: { 'dev.frognano.job': jobId } }).catch(() => undefined);
    await queue?.obliterate({ force: true });
    await queue?.close();
    await redis.del(`frognano:status:${owner.toLowerCase()}/calc#3`);
    await Promise.all([redis?.quit(), workerConn?.quit(), subscriber?.quit()]);
    await gh?.close();
    await remote?.cleanup();
    await ctx?.cleanup();
  });

  it('fixes the bug in the container, runs the repository tests there and opens a draft PR', async () => {
    const repo = 'calc';
    const base = 'main';
    remote = await makeBareRemote(owner, repo, {
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
      '.github/frognano.yml': 'testCommands: ["python3 -m pytest -q"]\n',
    });
    const token = fakeInstallationToken();
    gh = await startLocalGitHub(owner, repo, { token, installationId: 4242, prNumber: 31 });

    const logs = captureLogs();
    ctx = await runnerContext({
      redis,
      remote,
      logger: logs.logger,
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Bash', arguments: { command: PROBE } }] },
        {
          content: '',
          tool_calls: [{ name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } }],
        },
        { content: 'add() now adds; `python3 -m pytest -q` passes.', tool_calls: [] },
      ]),
    });
    ctx.app = { ...ctx.app, baseUrl: gh.url };
    ctx.createAccess = (installationId, r) =>
      createInstallationAccess(ctx!.app, { installationId, repo: r, retry: false });
    ctx.sandbox = SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, memoryMb: 512 });
    const sandboxes: { kind: string; containerId?: string }[] = [];
    ctx.createSandbox = async (cfg, ws) => {
      const sb = await createSandbox(cfg, ws);
      sandboxes.push({ kind: sb.constructor.name, containerId: (sb as { containerId?: string }).containerId });
      return sb;
    };

    jobId = (
      await enqueueJob(
        queue,
        jobData(owner, repo, { issueNumber: 3, title: 'add() subtracts', body: 'add(2, 3) should be 5' }),
      )
    ).job.id!;
    runner = createRunnerWorker({ connection: workerConn, subscriber, prefix, ctx, lockDurationMs: 30_000 });
    const job = await waitForJob(queue, jobId, 120_000);
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toMatchObject({
      outcome: 'pull_request',
      pullRequestNumber: 31,
      branch: 'frognano/issue-3',
    });
    expect(sandboxes).toEqual([{ kind: 'DockerSandbox', containerId: expect.any(String) }]);

    // The edit made in the container reached the remote branch.
    const head = gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-3').trim();
    expect(gitIn(remote.bare, 'show', `${head}:calc.py`)).toBe('def add(a, b):\n    return a + b\n');

    // Inside the container: uid 1000, loopback only, no token in the environment, no remote in the workspace.
    const trajectory = JSON.parse(await fs.readFile(job.returnvalue.trajectoryPath!, 'utf8'));
    const probe = String(trajectory.steps[0].observations[0].observation);
    expect(probe).toContain('probe-done');
    expect(probe).toMatch(/STDOUT:\n1000\nlo \n0\n/);
    expect(probe).not.toContain('[remote');
    expect(probe).not.toContain('x-access-token');

    // The repository's tests ran in the container and passed; the PR says so.
    const pulls = gh.find('POST', `/repos/${owner}/${repo}/pulls`);
    expect(pulls).toHaveLength(1);
    expect(pulls[0].body).toMatchObject({ head: 'frognano/issue-3', base, draft: true });
    expect(pulls[0].body.body).toContain('- `python3 -m pytest -q`: ✅ passed');
    expect(gh.statusBodies().at(-1)).toContain('draft pull request #31 opened');
    expect(gh.find('POST', '/check-runs')[0]!.body).toMatchObject({ head_sha: head, conclusion: 'action_required' });
    expect(gh.unexpected).toEqual([]);

    for (const text of [JSON.stringify(trajectory), pulls[0].body.body, ...gh.statusBodies(), logs.lines.join('')])
      expect(text).not.toContain(token);
    // The container is gone once the job is done.
    await expect(docker!.getContainer(sandboxes[0]!.containerId!).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await docker!.listContainers({ all: true, filters: { label: [`dev.frognano.job=${jobId}`] } })).toEqual([]);
  });
});
