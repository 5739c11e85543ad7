/**
 * Set-up snapshots through whole rounds, as a runner wires them (runner/service.ts: a SetupSnapshotCache in the
 * context): the first round runs its set-up and stores the snapshot before the model runs; its verification sides
 * restore that snapshot, so an ignored interpreter the model replaced stays replaced only in the model's workspace;
 * the next round of the repository restores the set-up instead of running it, and the status comment says so.
 * Real bwrap always; real docker with the test image.
 */
import path from 'node:path';
import type { Redis } from 'ioredis';
import { createInstallationAccess } from '../../src/github/client.js';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { SetupSnapshotCache } from '../../src/leaf/setupSnapshot.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { processJob } from '../../src/runner/processJob.js';
import { SandboxConfigSchema } from '../../src/sandbox/config.js';
import { makeBareRemote } from '../github/gitRepo.js';
import { removeDir, tempDir } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { startLocalGitHub } from './localGitHub.js';

const docker = await dockerForTests();
const REPO = 'calc';
const CALC = 'def add(a, b):\n    return a - b\n';
const TESTS =
  'import unittest\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n' +
  '    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n';
/** An ignored interpreter made by the set-up (as a venv would be), which the tests run through. */
const FILES = {
  '.gitignore': '.venv/\n',
  'calc.py': CALC,
  'test_calc.py': TESTS,
  'requirements.txt': 'six\n',
  '.github/frognano.yml':
    'setupCommands: ["sleep 2 && mkdir -p .venv/bin && ln -sf /usr/bin/python3 .venv/bin/python"]\n' +
    'testCommands: [".venv/bin/python -m unittest -v"]\n',
};
const FAKE_OK =
  "printf '#!/bin/sh\\necho Ran 1 test >&2\\necho OK >&2\\n' > .venv/bin/python && chmod +x .venv/bin/python";
const LYING_TURNS: ReplayTurn[] = [
  { content: '', tool_calls: [{ name: 'Bash', arguments: { command: `rm .venv/bin/python && ${FAKE_OK}` } }] },
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'NOTES.md', content: 'add is fixed\n' } }] },
  { content: 'Fixed `add`; all tests pass.', tool_calls: [] },
];
const FIX_TURNS: ReplayTurn[] = [
  {
    content: '',
    tool_calls: [{ name: 'Write', arguments: { file_path: 'calc.py', content: CALC.replace('a - b', 'a + b') } }],
  },
  { content: 'Fixed `add`.', tool_calls: [] },
];

const kinds = docker ? ['bwrap', 'docker'] : ['bwrap'];

describe.each(kinds)('set-up snapshots through rounds on %s', (kind) => {
  let redis: Redis;
  let cacheDir: string;
  const owner = uniqueOwner('ss');
  beforeAll(async () => {
    redis = createRedisConnection(process.env.REDIS_URL);
    cacheDir = await tempDir('fn-runner-setup-cache-');
  });
  afterAll(async () => {
    await redis.quit();
    await removeDir(cacheDir);
  });

  /** One round of the same repository (a fresh remote and GitHub each time; the runner's cache is kept). */
  async function round(turns: ReplayTurn[]) {
    const remote = await makeBareRemote(owner, REPO, FILES);
    const logs = captureLogs();
    const ctx = await runnerContext({
      redis,
      remote,
      backend: ReplayBackend.fromTurns(turns),
      logger: logs.logger,
      verify: true,
    });
    const gh = await startLocalGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    try {
      ctx.app = { ...ctx.app, baseUrl: gh.url };
      ctx.createAccess = (installationId, r) =>
        createInstallationAccess(ctx.app, { installationId, repo: r, retry: false });
      ctx.setupCache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1024 ** 3, maxSnapshotBytes: 64 * 1024 ** 2 });
      if (kind === 'docker')
        ctx.sandbox = SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, memoryMb: 512 });
      const handle = { id: `${owner}/${REPO}#7@1`, data: jobData(owner, REPO), updateProgress: async () => undefined };
      const result = await processJob(handle, ctx, new AbortController().signal);
      const [pr] = gh.find('POST', '/pulls');
      expect(gh.unexpected).toEqual([]);
      const messages = logs.lines.map((l) => String(JSON.parse(l).msg));
      // The comment escapes the runner's detail line as untrusted text: read it without the backslashes.
      const statuses = gh.statusBodies().map((b) => b.replace(/\\/g, ''));
      return { result, body: String(pr.body.body), statuses, messages };
    } finally {
      await gh.close();
      await remote.cleanup();
      await ctx.cleanup();
      await redis.del(`frognano:status:${owner.toLowerCase()}/${REPO}#7`);
    }
  }

  it('stores the set-up in the first round, restores it in its verification and in the next round', async () => {
    const first = await round(LYING_TURNS);
    expect(first.result).toMatchObject({ outcome: 'pull_request' });
    expect(first.statuses.some((s) => /Set-up ran \(\d+ s\)\./.test(s))).toBe(true);
    expect(first.messages).toContain('set-up snapshot stored');
    // Both verification sides restored the snapshot taken before the model: the real interpreter, still failing.
    expect(first.messages.filter((m) => m === 'set-up restored from a snapshot').length).toBe(2);
    expect(first.body).toMatch(/## Verification\n\n❌ /);
    expect(first.body).toMatch(/Still failing[\s\S]*test\\_add/);
    const files = await new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1, maxSnapshotBytes: 1 }).list();
    expect(files.map((f) => path.relative(cacheDir, path.dirname(f.file)))).toEqual([`4242/${owner}/${REPO}`]);

    const second = await round(FIX_TURNS);
    expect(second.statuses.some((s) => /Set-up reused \(key [0-9a-f]{12}…\)\./.test(s))).toBe(true);
    expect(second.messages).not.toContain('set-up snapshot stored');
    expect(second.body).toMatch(/Fixed[\s\S]*test\\_add/);
  }, 600_000);
});
