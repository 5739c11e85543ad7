import { promises as fs } from 'node:fs';
import { Redis } from 'ioredis';
import nock from 'nock';
import { ReplayBackend } from '../../src/inference/replay.js';
import { jobIdFor } from '../../src/queue/schema.js';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { createHarness, labeledPayload, receive, REDIS_URL, type Harness } from '../app/helpers.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, runnerContext } from './fixtures.js';
import { API, recordGitHub } from './githubRecorder.js';

/**
 * The whole path: a real issues.labeled webhook payload into the Probot app -> BullMQ job in Redis ->
 * a real BullMQ Worker runs processJob -> branch pushed to a real bare repository -> draft PR created.
 * Only GitHub's HTTP API is simulated (nock).
 */
describe('webhook -> queue -> worker -> draft pull request', () => {
  let h: Harness;
  let remote: BareRemote;
  let runner: RunnerWorker | undefined;
  let workerConn: Redis;
  let subscriber: Redis;
  let ctx: Awaited<ReturnType<typeof runnerContext>>;

  beforeAll(async () => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
    h = await createHarness('e2e-runner');
    workerConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    subscriber = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await runner?.shutdown(1000);
    await h.close();
    await Promise.all([workerConn.quit(), subscriber.quit()]);
    await remote?.cleanup();
    await ctx?.cleanup();
    nock.cleanAll();
    nock.enableNetConnect();
    nock.restore(); // give later test files in this worker an unpatched http module
  });

  it('opens a draft PR for a labelled issue', async () => {
    const payload = labeledPayload(); // Codertocat/Hello-World#1, "Spelling error in the README file"
    const owner = payload.repository.owner.login as string;
    const repo = payload.repository.name as string;
    const base = payload.repository.default_branch as string; // `master` in this example
    remote = await makeBareRemote(
      owner,
      repo,
      { 'README.md': '# Hello World\n\nRemember to comitt often.\n' },
      { branch: base },
    );
    const token = fakeInstallationToken();
    const gh = recordGitHub(owner, repo, { token, installationId: payload.installation.id, prNumber: 12 });
    nock(API)
      .persist()
      .get(`/repos/${owner}/${repo}/collaborators/${payload.sender.login}/permission`)
      .reply(200, { permission: 'admin', role_name: 'admin' });

    const logs = captureLogs();
    ctx = await runnerContext({
      redis: h.redis, // the app's connection (same key prefix): one status comment, found through the shared cache
      remote,
      logger: logs.logger,
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] },
        {
          content: '',
          tool_calls: [
            { name: 'Edit', arguments: { file_path: 'README.md', old_string: 'comitt', new_string: 'commit' } },
          ],
        },
        { content: 'Fixed the spelling of "commit" in README.md.', tool_calls: [] },
      ]),
    });

    await receive(h.probot, 'issues', payload);
    const jobId = jobIdFor({ owner, repo, issueNumber: payload.issue.number, attempt: 1 });
    expect(await (await h.queue.getJob(jobId))?.getState()).toBe('waiting');

    runner = createRunnerWorker({
      connection: workerConn,
      subscriber,
      prefix: h.queue.opts.prefix,
      ctx,
      lockDurationMs: 30_000,
    });
    const job = await waitForFinish(h, jobId, 60_000);
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toMatchObject({
      outcome: 'pull_request',
      pullRequestNumber: 12,
      branch: 'frognano/issue-1',
    });

    // The branch is in the remote with the model's edit.
    const head = gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-1').trim();
    expect(gitIn(remote.bare, 'show', `${head}:README.md`)).toBe('# Hello World\n\nRemember to commit often.\n');

    // The PR creation call GitHub received.
    const pulls = gh.find('POST', `/repos/${owner}/${repo}/pulls`);
    expect(pulls).toHaveLength(1);
    expect(pulls[0].body).toMatchObject({
      head: 'frognano/issue-1',
      base,
      draft: true,
      title: 'frognano: Spelling error in the README file',
    });
    expect(pulls[0].body.body).toContain('Refs #1');
    expect(pulls[0].body.body).toContain('| `README.md` | 1 | 1 |');
    expect(gh.find('POST', '/check-runs')[0].body).toMatchObject({ head_sha: head, conclusion: 'action_required' });

    // One status comment for the issue (created by the app when queued), edited by the runner to the end state.
    expect(gh.find('POST', '/issues/1/comments')).toHaveLength(1);
    const bodies = gh.statusBodies();
    expect(bodies[0]).toContain('queued');
    expect(bodies.at(-1)).toContain('draft pull request #12 opened');

    const stored = await fs.readFile(job.returnvalue.trajectoryPath!, 'utf8');
    for (const text of [stored, pulls[0].body.body, ...bodies, logs.lines.join('')]) expect(text).not.toContain(token);
  });
});

async function waitForFinish(h: Harness, jobId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await h.queue.getJob(jobId);
    const state = await job?.getState();
    if (job && (state === 'completed' || state === 'failed')) return job;
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not finish in ${timeoutMs} ms (state ${state})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
