/**
 * Warm starts through whole rounds of one pull request, as a runner wires them (a git mirror and a set-up snapshot
 * cache in the context), on real bwrap and docker, against a real bare remote and the local stand-in GitHub (not nock:
 * it breaks docker's exec streams):
 *   1. the first attempt runs the slow set-up and stores its snapshot;
 *   2. a follow-up round restores it: the model sees the first round's set-up product (its marker, written once), the
 *      set-up did not run again; the model changes a key file;
 *   3. the next follow-up round runs the set-up again (the key changed) and stores it in the pull request's own scope;
 *   4. the round after restores that one.
 * The status comment says "Set-up ran (N s)." or "Set-up reused (key …)." each time.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { createInstallationAccess } from '../../src/github/client.js';
import { GitMirrorCache } from '../../src/github/gitMirror.js';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { SetupSnapshotCache } from '../../src/leaf/setupSnapshot.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import type { JobData } from '../../src/queue/schema.js';
import { processJob } from '../../src/runner/processJob.js';
import { SandboxConfigSchema } from '../../src/sandbox/config.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { removeDir, tempDir } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { startLocalGitHub } from './localGitHub.js';

const docker = await dockerForTests();
const REPO = 'calc';
const PR = 5;
const HEAD = 'frognano/issue-7';
/** A slow set-up whose product the model can tell apart: a marker with the time it ran, and a line per run. */
const SETUP = 'sleep 3 && mkdir -p .venv && date +%s%N > .venv/marker && echo ran >> .venv/runs';
const FILES = {
  '.gitignore': '.venv/\n',
  'requirements.txt': 'six==1.16\n',
  'calc.py': 'def add(a, b):\n    return a + b\n',
  '.github/frognano.yml': `setupCommands: [${JSON.stringify(SETUP)}]\n`,
};

/** The model's turns: look at the set-up's product, write one file, finish. */
function turns(file: string, content: string): ReplayTurn[] {
  return [
    { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'cat .venv/marker; wc -l < .venv/runs' } }] },
    { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: file, content } }] },
    { content: `Wrote ${file}.`, tool_calls: [] },
  ];
}

const kinds = docker ? ['bwrap', 'docker'] : ['bwrap'];

describe.each(kinds)('warm starts through the rounds of a pull request on %s', (kind) => {
  let redis: Redis;
  let caches: string;
  let remote: BareRemote;
  const owner = uniqueOwner('warm');
  beforeAll(async () => {
    redis = createRedisConnection(process.env.REDIS_URL);
    caches = await tempDir('fn-runner-warm-');
    remote = await makeBareRemote(owner, REPO, FILES);
  });
  afterAll(async () => {
    await redis.del(
      `frognano:status:${owner.toLowerCase()}/${REPO}#7`,
      `frognano:status:${owner.toLowerCase()}/${REPO}#${PR}`,
    );
    await redis.quit();
    await remote.cleanup();
    await removeDir(caches);
  });

  /** One round through processJob, with the runner's caches kept from round to round. */
  async function round(data: JobData, modelTurns: ReplayTurn[]) {
    const logs = captureLogs();
    const ctx = await runnerContext({
      redis,
      remote,
      backend: ReplayBackend.fromTurns(modelTurns),
      logger: logs.logger,
    });
    const gh = await startLocalGitHub(owner, REPO, {
      token: fakeInstallationToken(),
      installationId: 4242,
      prNumber: PR,
      pull: { remote, head: HEAD, base: 'main' },
    });
    try {
      ctx.app = { ...ctx.app, baseUrl: gh.url };
      ctx.createAccess = (installationId, r) =>
        createInstallationAccess(ctx.app, { installationId, repo: r, retry: false });
      ctx.gitCache = new GitMirrorCache({ dir: path.join(caches, 'git'), maxBytes: 1024 ** 3 });
      ctx.setupCache = new SetupSnapshotCache({
        dir: path.join(caches, 'setup'),
        maxBytes: 1024 ** 3,
        maxSnapshotBytes: 64 * 1024 ** 2,
      });
      if (kind === 'docker')
        ctx.sandbox = SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, memoryMb: 512 });
      const handle = { id: `${owner}/${REPO}#${data.issueNumber}@1`, data, updateProgress: async () => undefined };
      const result = await processJob(handle, ctx, new AbortController().signal);
      expect(gh.unexpected).toEqual([]);
      expect(result).toMatchObject({ outcome: 'pull_request' });
      const lines = logs.lines.map((l) => JSON.parse(l) as { msg: string; scope?: string });
      const statuses = gh.statusBodies().map((b) => b.replace(/\\/g, ''));
      // The model's first tool call: the set-up's marker and how many times the set-up ran in this workspace.
      const { steps } = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
      const [, marker, runs] = /STDOUT:\n(\d+)\n\s*(\d+)\n/.exec(String(steps[0].observations[0].observation)) ?? [];
      const events = (msg: string) => lines.filter((l) => l.msg === msg).map((l) => l.scope);
      return {
        marker,
        runs,
        ran: statuses.some((s) => /Set-up ran \(\d+ s\)\./.test(s)),
        reused: statuses.some((s) => /Set-up reused \(key [0-9a-f]{12}…\)\./.test(s)),
        stored: events('set-up snapshot stored'),
        restored: events('set-up restored from a snapshot'),
      };
    } finally {
      await gh.close();
      await ctx.cleanup();
    }
  }

  let followUps = 0;
  function followUp(): JobData {
    followUps += 1;
    return jobData(owner, REPO, {
      trigger: 'comment',
      followUp: {
        pullNumber: PR,
        headBranch: HEAD,
        headSha: gitIn(remote.bare, 'rev-parse', `refs/heads/${HEAD}`).trim(),
        baseBranch: 'main',
        round: followUps,
        feedback: '/frognano go on',
        inlineComments: [],
        omittedComments: 0,
        source: 'comment',
      },
    });
  }

  it('restores the first round in a follow-up, reruns a changed key file once, then restores that', async () => {
    const first = await round(jobData(owner, REPO), turns('NOTES.md', 'first\n'));
    expect(first).toMatchObject({ ran: true, reused: false, runs: '1', stored: ['repository'], restored: [] });

    // The follow-up sees the first round's set-up product itself: the same marker, one run in all.
    const second = await round(followUp(), turns('requirements.txt', 'six==1.17\n'));
    expect(second).toMatchObject({ ran: false, reused: true, marker: first.marker, runs: '1', stored: [] });
    expect(second.restored).toEqual(['repository']);
    expect(gitIn(remote.bare, 'show', `${HEAD}:requirements.txt`)).toBe('six==1.17\n');

    // The key file changed on the pull request: the set-up runs once, into the pull request's own scope...
    const third = await round(followUp(), turns('NOTES.md', 'third\n'));
    expect(third).toMatchObject({ ran: true, reused: false, runs: '1', stored: ['pull-5'], restored: [] });
    expect(third.marker).not.toBe(first.marker);

    // ...and the round after restores it.
    const fourth = await round(followUp(), turns('NOTES.md', 'fourth\n'));
    expect(fourth).toMatchObject({ ran: false, reused: true, marker: third.marker, runs: '1', stored: [] });
    expect(fourth.restored).toEqual(['pull-5']);
  }, 600_000);
});
