import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UnrecoverableError } from 'bullmq';
import nock from 'nock';
import type { Redis } from 'ioredis';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { cancelKey, requestCancel } from '../../src/queue/cancel.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { HandBackError, processJob, type AbortCause, type RunnerContext } from '../../src/runner/processJob.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';

const REPO = 'greeter';
const FILES = {
  'hello.txt': 'hi\n',
  'test.sh': '#!/bin/sh\ngrep -q hello hello.txt\n',
  '.github/frognano.yml': 'testCommands: ["sh test.sh"]\n',
};

const PROBE = 'env | sort; echo ---; cat .git/config; echo ---; git remote -v; echo ---; git config --list --show-origin';
const FIX_TURNS: ReplayTurn[] = [
  { content: 'Let me look around.', tool_calls: [{ name: 'Bash', arguments: { command: PROBE } }] },
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hello\n' } }] },
  { content: 'Changed the greeting in `hello.txt` from "hi" to "hello"; `sh test.sh` passes.', tool_calls: [] },
];

describe('processJob', () => {
  let redis: Redis;
  let remote: BareRemote;
  let owner: string;
  let token: string;
  let ctx: RunnerContext & { cleanup(): Promise<void> };
  let logs: ReturnType<typeof captureLogs>;
  let gh: ReturnType<typeof recordGitHub>;
  let progress: object[];

  beforeAll(() => {
    redis = createRedisConnection(process.env.REDIS_URL);
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  afterAll(async () => {
    nock.enableNetConnect();
    nock.restore(); // give later test files in this worker an unpatched http module
    await redis.quit();
  });

  async function setup(turns: ReplayTurn[], files: Record<string, string> = FILES, over: { tokenStatus?: number; tokenLifetimeMs?: number } = {}) {
    owner = uniqueOwner('pj');
    token = fakeInstallationToken();
    remote = await makeBareRemote(owner, REPO, files);
    logs = captureLogs();
    ctx = await runnerContext({ redis, remote, backend: ReplayBackend.fromTurns(turns), logger: logs.logger });
    gh = recordGitHub(owner, REPO, { token, installationId: 4242, ...over });
    progress = [];
  }
  afterEach(async () => {
    gh?.done();
    await remote?.cleanup();
    await ctx?.cleanup();
    await redis.del(`frognano:status:${owner.toLowerCase()}/${REPO}#7`);
  });

  const handle = (over = {}) => ({ id: `${owner}/${REPO}#7@1`, data: jobData(owner, REPO, over), updateProgress: async (p: object) => void progress.push(p) });
  const branches = () => gitIn(remote.bare, 'for-each-ref', '--format=%(refname)', 'refs/heads/').trim().split('\n');

  it('turns an issue into a pushed branch and a draft PR with label, approval check and final status', async () => {
    await setup(FIX_TURNS);
    const result = await processJob(handle(), ctx, new AbortController().signal);

    expect(result).toMatchObject({ outcome: 'pull_request', pullRequestNumber: 5, branch: 'frognano/issue-7', exitReason: 'agent', turns: 3 });
    // The branch really is in the remote, committed by the bot on top of main, with the model's change.
    expect(branches()).toEqual(['refs/heads/frognano/issue-7', 'refs/heads/main']);
    const head = gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-7').trim();
    expect(gitIn(remote.bare, 'show', `${head}:hello.txt`)).toBe('hello\n');
    expect(gitIn(remote.bare, 'log', '-1', '--format=%an|%P|%s', head).trim()).toBe(
      `frognano[bot]|${gitIn(remote.bare, 'rev-parse', 'refs/heads/main').trim()}|frognano: Greeting is wrong`,
    );

    const [pr] = gh.find('POST', '/pulls');
    expect(pr.body).toMatchObject({ head: 'frognano/issue-7', base: 'main', draft: true, title: 'frognano: Greeting is wrong' });
    expect(pr.body.body).toContain('Refs #7');
    expect(pr.body.body).toContain('requires human approval');
    expect(pr.body.body).toContain('Changed the greeting in `hello.txt`');
    expect(pr.body.body).toContain('| `hello.txt` | 1 | 1 |');
    expect(pr.body.body).toContain('- `sh test.sh`: ✅ passed');
    expect(pr.body.body).toContain('<details><summary>Trajectory</summary>');
    expect(gh.find('POST', `/repos/${owner}/${REPO}/labels`)[0].body.name).toBe('frognano:needs-review');
    expect(gh.find('POST', '/issues/5/labels')[0].body).toEqual({ labels: ['frognano:needs-review'] });
    expect(gh.find('POST', '/check-runs')[0].body).toMatchObject({
      name: 'frognano / human approval',
      head_sha: head,
      status: 'completed',
      conclusion: 'action_required',
      details_url: `https://github.com/${owner}/${REPO}/pull/5`,
    });

    // Status comment: one created, then edited in place; running with the runner and turns, ending with the PR.
    const bodies = gh.statusBodies();
    expect(gh.find('POST', '/issues/7/comments')).toHaveLength(1);
    expect(bodies[0]).toContain('working on it');
    expect(bodies[0]).toContain('runner test-host');
    expect(bodies.some((b) => /Turn 2 of at most 100/.test(b))).toBe(true);
    expect(bodies.at(-1)).toContain(`draft pull request #5 opened`);
    expect(bodies.at(-1)).toContain(`https://github.com/${owner}/${REPO}/pull/5`);
    expect(progress).toContainEqual(expect.objectContaining({ phase: 'solving', turn: 3, maxTurns: 100 }));

    // The full trajectory is stored where configured.
    const stored = path.join(ctx.trajectoryDir, owner, REPO, 'issue-7-attempt-1', 'trajectory.json');
    expect(result.trajectoryPath).toBe(stored);
    const trajectory = await fs.readFile(stored, 'utf8');
    expect(JSON.parse(trajectory).exit_reason).toBe('agent');

    // The token never reached the sandbox (the probe printed env and git config), the trajectory, the PR or the logs,
    // and nothing had to be scrubbed: it was never there.
    const probeOutput = JSON.parse(trajectory).steps[0].observations[0].observation as string;
    expect(probeOutput).toContain('Exit code: 0');
    expect(probeOutput).toContain('PATH=');
    for (const text of [trajectory, pr.body.body, ...bodies, logs.lines.join('')]) {
      expect(text).not.toContain(token);
      expect(text).not.toMatch(/extraheader|AUTHORIZATION|x-access-token|GIT_CONFIG_/i);
    }
    expect(trajectory).not.toContain('[REDACTED]');
    expect(logs.lines.join('')).toContain('draft pull request opened');
  });

  it('mints a fresh installation token before publishing when the first one is about to expire', async () => {
    await setup(FIX_TURNS, FILES, { tokenLifetimeMs: 5 * 60_000 });
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result.outcome).toBe('pull_request');
    expect(gh.find('POST', '/app/installations/4242/access_tokens')).toHaveLength(2);
  });

  it("keeps the PR description within GitHub's 65,536 characters when the trajectory is huge", async () => {
    const noisy = { content: '', tool_calls: [{ name: 'Bash', arguments: { command: "head -c 29000 /dev/zero | tr '\\0' x" } }] };
    await setup([noisy, noisy, noisy, noisy, ...FIX_TURNS.slice(1)]);
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result.outcome).toBe('pull_request');
    const body = gh.find('POST', '/pulls')[0].body.body as string;
    const stored = await fs.readFile(result.trajectoryPath!, 'utf8');
    expect(stored.length).toBeGreaterThan(110_000); // the stored trajectory is complete ...
    expect(body.length).toBeLessThanOrEqual(65_536); // ... the description holds a shortened rendering
    expect(body).toMatch(/Turn 6: answer/); // every turn is still listed
    expect(body).toContain('<details><summary>Trajectory</summary>');
    expect(body.trimEnd().endsWith('</details>')).toBe(true);
  });

  it('works from the baseBranch named in .github/frognano.yml and targets it', async () => {
    owner = uniqueOwner('pj');
    token = fakeInstallationToken();
    remote = await makeBareRemote(owner, REPO, { ...FILES, '.github/frognano.yml': 'baseBranch: develop\n' }, {
      extraBranches: { develop: { 'hello.txt': 'hi from develop\n' } },
    });
    logs = captureLogs();
    ctx = await runnerContext({
      redis,
      remote,
      logger: logs.logger,
      backend: ReplayBackend.fromTurns([
        { content: '', tool_calls: [{ name: 'Edit', arguments: { file_path: 'hello.txt', old_string: 'hi from', new_string: 'hello from' } }] },
        { content: 'Done.', tool_calls: [] },
      ]),
    });
    gh = recordGitHub(owner, REPO, { token, installationId: 4242 });
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result.outcome).toBe('pull_request');
    expect(gh.find('POST', '/pulls')[0].body.base).toBe('develop');
    expect(gitIn(remote.bare, 'show', 'refs/heads/frognano/issue-7:hello.txt')).toBe('hello from develop\n');
    expect(gitIn(remote.bare, 'rev-parse', 'refs/heads/frognano/issue-7~1').trim()).toBe(gitIn(remote.bare, 'rev-parse', 'refs/heads/develop').trim());
  });

  it('reports "no change proposed" when the model finishes without editing anything', async () => {
    await setup([{ content: 'The greeting already looks right to me.', tool_calls: [] }]);
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result).toMatchObject({ outcome: 'no_patch', exitReason: 'agent', reason: 'The model finished without changing any file.' });
    expect(gh.find('POST', '/pulls')).toEqual([]);
    expect(branches()).toEqual(['refs/heads/main']);
    expect(gh.statusBodies().at(-1)).toContain('no change proposed');
  });

  it('does not open a PR when the turn limit ends the run, even with a partial change', async () => {
    const files = { ...FILES, '.github/frognano.yml': 'limits: {maxTurns: 1}\n' };
    await setup([{ content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hel' } }] }, ...FIX_TURNS], files);
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result).toMatchObject({ outcome: 'no_patch', exitReason: 'max_turns', turns: 1 });
    expect(result.reason).toMatch(/the turn limit was reached \(`max_turns`, after 1 turn\)/);
    expect(branches()).toEqual(['refs/heads/main']);
    expect(gh.statusBodies().at(-1)).toContain('the turn limit was reached');
  });

  it('says plainly when every turn ended in malformed tool-call markup, never "the model finished"', async () => {
    await setup([{ content: '<tool_call>\n<function=Write>', tool_calls: [], parse_errors: ['Malformed tool call #1: no closing </function>'] }]);
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result).toMatchObject({ outcome: 'no_patch', exitReason: 'agent' });
    expect(result.reason).toContain("every turn ended in malformed tool-call markup: check the model server's tool parser");
    expect(gh.statusBodies().at(-1)).toContain('malformed tool-call markup');
    expect(gh.statusBodies().at(-1)).not.toMatch(/the model finished/i);
  });

  it('refuses a change to .github/workflows and pushes nothing', async () => {
    await setup([
      { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: '.github/workflows/ci.yml', content: 'on: push\n' } }] },
      { content: 'Added CI.', tool_calls: [] },
    ]);
    const result = await processJob(handle(), ctx, new AbortController().signal);
    expect(result.outcome).toBe('refused');
    expect(result.reason).toContain('`.github/workflows/ci.yml`');
    expect(branches()).toEqual(['refs/heads/main']);
    expect(gh.find('POST', '/pulls')).toEqual([]);
    const last = gh.statusBodies().at(-1)!;
    expect(last).toContain('failed');
    expect(last).toContain('Refused by a guardrail');
  });

  it('fails with the bad field named when .github/frognano.yml is invalid', async () => {
    await setup(FIX_TURNS, { ...FILES, '.github/frognano.yml': 'limits:\n  maxTurns: lots\n' });
    const err = await processJob(handle(), ctx, new AbortController().signal).catch((e) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toMatch(/`limits\.maxTurns`/);
    const last = gh.statusBodies().at(-1)!;
    expect(last).toContain('failed');
    expect(last).toContain('limits.maxTurns');
    expect(last).toContain('/frognano retry');
  });

  it('fails with "could not clone" when the repository cannot be cloned', async () => {
    await setup(FIX_TURNS);
    const other = recordGitHub(owner, 'no-such-repo', { token, installationId: 4242 });
    const err = await processJob({ ...handle(), data: jobData(owner, 'no-such-repo') }, ctx, new AbortController().signal).catch((e) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toMatch(/^could not clone .*\/no-such-repo \(branch main\): git clone failed/);
    expect(err.message).not.toContain(token);
    const last = other.statusBodies().at(-1)!;
    expect(last).toContain('failed');
    expect(last).toContain('could not clone');
    await redis.del(`frognano:status:${owner.toLowerCase()}/no-such-repo#7`);
  });

  it('fails clearly when no installation token can be had (and cannot comment)', async () => {
    await setup(FIX_TURNS, FILES, { tokenStatus: 404 });
    const err = await processJob(handle(), ctx, new AbortController().signal).catch((e) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err.message).toMatch(/^could not get an installation token for .*\/greeter: /);
    expect(gh.statusBodies()).toEqual([]);
  });

  it('honours cancellation mid-run and says who cancelled', async () => {
    await setup([{ content: 'thinking…', delay_ms: 20_000, tool_calls: [] }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort({ kind: 'cancel', by: 'maint' } satisfies AbortCause), 1500);
    const started = Date.now();
    const result = await processJob(handle(), ctx, ac.signal);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(result.outcome).toBe('cancelled');
    expect(gh.statusBodies().at(-1)).toContain('Cancelled by @maint');
  });

  it('keeps "Cancellation requested" in the status comment until the run stops', async () => {
    // The app recorded `/frognano cancel` while turn 2 starts; this runner has not stopped yet (its signal is
    // not aborted), so the next progress edits must not replace the maintainer's note with tool activity.
    await setup(FIX_TURNS);
    const h = handle();
    let requestedAt = -1;
    const job = {
      ...h,
      updateProgress: async (p: object) => {
        progress.push(p);
        if (requestedAt < 0 && (p as { turn?: number }).turn === 2) {
          await requestCancel(redis, h.id, 'maint');
          requestedAt = gh.statusBodies().length;
        }
      },
    };
    try {
      await processJob(job, ctx, new AbortController().signal);
    } finally {
      await redis.del(cancelKey(h.id));
    }
    const bodies = gh.statusBodies();
    expect(requestedAt).toBeGreaterThan(0);
    expect(bodies.slice(0, requestedAt).every((b) => !b.includes('Cancellation requested'))).toBe(true);
    const runningAfter = bodies.slice(requestedAt).filter((b) => b.includes('working on it'));
    expect(runningAfter.length).toBeGreaterThanOrEqual(2);
    for (const b of runningAfter) expect(b).toContain('Cancellation requested by @maint; the runner stops at its next step.');
  });

  it('hands the job back (status queued) when the runner shuts down', async () => {
    await setup([{ content: 'thinking…', delay_ms: 20_000, tool_calls: [] }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort({ kind: 'shutdown' } satisfies AbortCause), 1500);
    await expect(processJob(handle(), ctx, ac.signal)).rejects.toBeInstanceOf(HandBackError);
    expect(gh.statusBodies().at(-1)).toContain('queued');
  });

  it('rejects invalid job data without touching GitHub', async () => {
    await setup(FIX_TURNS);
    await expect(processJob({ ...handle(), data: { owner: 'x' } }, ctx, new AbortController().signal)).rejects.toThrow(/^invalid job data: /);
    expect(gh.calls).toEqual([]);
  });
});
