import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { parseRepoConfig } from '../../src/github/repoConfig.js';
import { DEFAULT_KEY_FILES, SetupSnapshotCache } from '../../src/leaf/setupSnapshot.js';
import type { JobData } from '../../src/queue/schema.js';
import type { RunnerProgress } from '../../src/queue/schema.js';
import { ProgressReporter } from '../../src/runner/progress.js';
import { setupSnapshotFor } from '../../src/runner/setupSnapshot.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { forgetSandboxIdentities, sandboxIdentity } from '../../src/sandbox/identity.js';
import { SandboxConfigSchema } from '../../src/sandbox/index.js';
import { git, makeRepo, removeDir, tempDir } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';

const engine = await dockerForTests();

/** The runner's side of set-up snapshots: when a round gets one, its key, and what the status comment says. */
describe('setupSnapshotFor', () => {
  let repo: string;
  let cacheDir: string;
  let ctx: RunnerContext;
  const data = { installationId: 7, owner: 'acme', repo: 'calc' } as JobData;
  const log = pino({ level: 'silent' });
  // The host's identity keys bwrap (everywhere); docker keys need the engine to read the image's ID.
  const main = SandboxConfigSchema.parse({ kind: 'bwrap' });
  beforeEach(async () => {
    repo = await makeRepo({ 'requirements.txt': 'six\n', 'a.py': 'x\n' });
    cacheDir = await tempDir('fn-setup-cache-');
    const setupCache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1024 ** 3, maxSnapshotBytes: 1024 ** 2 });
    ctx = { setupCache } as RunnerContext;
  });
  afterEach(async () => {
    await removeDir(repo);
    await removeDir(cacheDir);
  });
  const head = () => git(repo, 'rev-parse', 'HEAD').trim();

  it('keys the round on its installation, repository, set-up and image, with the repository key files', async () => {
    const cfg = parseRepoConfig(
      'setupCommands: ["pip install -r requirements.txt"]\nsetup:\n  cacheKeyFiles: ["tools/*.sh"]\n',
    );
    const use = await setupSnapshotFor({ ctx, data, log }, cfg, repo, head(), main, 'round');
    expect(use).toMatchObject({ repository: '7/acme/calc', keyFiles: [...DEFAULT_KEY_FILES, 'tools/*.sh'] });
    expect(use!.key).toMatch(/^[0-9a-f]{64}$/);
    expect(use!.mayStore).toBe(true);
    expect(use!.scope).toBeUndefined();
    // A follow-up (or CI-fix) round sets up the model's own branch: same key, stored in its pull request's own scope.
    const followUp = { ...data, followUp: { pullNumber: 3, round: 2 } } as unknown as JobData;
    const later = await setupSnapshotFor({ ctx, data: followUp, log }, cfg, repo, head(), main, 'round');
    expect(later).toMatchObject({ key: use!.key, mayStore: true, scope: 'pull-3' });
    // Its verification sides restore the repository's snapshots only, and store none.
    const verify = await setupSnapshotFor({ ctx, data: followUp, log }, cfg, repo, head(), main, 'verify');
    expect(verify).toMatchObject({ key: use!.key, mayStore: false });
    expect(verify!.scope).toBeUndefined();
    expect(path.basename(later!.cache.fileFor(later!.repository, later!.key, later!.scope))).toBe(
      `pull-3.${use!.key}.tgz`,
    );
    expect(path.dirname(use!.cache.fileFor(use!.repository, use!.key))).toBe(path.join(cacheDir, '7', 'acme', 'calc'));
    const other = await setupSnapshotFor(
      { ctx, data: { ...data, installationId: 8 }, log },
      cfg,
      repo,
      head(),
      main,
      'round',
    );
    expect(other!.key).not.toBe(use!.key);
    if (engine) {
      const docker = SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE });
      expect((await setupSnapshotFor({ ctx, data, log }, cfg, repo, head(), docker, 'round'))!.key).not.toBe(use!.key);
    }
    // A file `setup.cacheKeyFiles` names changes the key once committed; another file does not.
    const keyNow = async () => (await setupSnapshotFor({ ctx, data, log }, cfg, repo, head(), main, 'round'))!.key;
    await writeFile(path.join(repo, 'tools.sh'), 'x');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'not a key file');
    expect(await keyNow()).toBe(use!.key);
    await mkdir(path.join(repo, 'tools'));
    await writeFile(path.join(repo, 'tools', 'gen.sh'), 'x');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'a key file');
    expect(await keyNow()).not.toBe(use!.key);
  });

  it('gives none with `setup.cache: false`, without set-up commands, or without a cache on the runner', async () => {
    const off = parseRepoConfig('setupCommands: ["make deps"]\nsetup:\n  cache: false\n');
    expect(await setupSnapshotFor({ ctx, data, log }, off, repo, head(), main, 'round')).toBeUndefined();
    expect(
      await setupSnapshotFor({ ctx, data, log }, parseRepoConfig(''), repo, head(), main, 'round'),
    ).toBeUndefined();
    const on = parseRepoConfig('setupCommands: ["make deps"]\n');
    expect(
      await setupSnapshotFor({ ctx: {} as RunnerContext, data, log }, on, repo, head(), main, 'round'),
    ).toBeUndefined();
    expect(await setupSnapshotFor({ ctx, data, log }, on, repo, head(), main, 'round')).toBeDefined();
  });

  (engine ? it : it.skip)('keys docker on the image ID, not its tag: a tag moved to another image', async () => {
    const tag = `frognano-identity-test:${randomBytes(4).toString('hex')}`;
    const sh = (...args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).trim();
    const cfg = parseRepoConfig('setupCommands: ["make deps"]\n');
    const keyOn = async (image: string) => {
      const sandbox = SandboxConfigSchema.parse({ kind: 'docker', image });
      return (await setupSnapshotFor({ ctx, data, log }, cfg, repo, head(), sandbox, 'round'))!.key;
    };
    const container = sh('create', TEST_IMAGE, 'true');
    try {
      sh('tag', TEST_IMAGE, tag);
      forgetSandboxIdentities();
      const before = await keyOn(tag);
      // Same image, another tag: the same key (the ID decides, not the name).
      expect(await keyOn(TEST_IMAGE)).toBe(before);
      // The tag now names a different image (one more label): a new key, and a new base-result environment.
      sh('commit', '--change', 'LABEL dev.frognano.test=retagged', container, tag);
      forgetSandboxIdentities();
      expect(await keyOn(tag)).not.toBe(before);
      expect(await sandboxIdentity({ kind: 'docker', image: tag })).toMatch(/^docker:sha256:[0-9a-f]{64}$/);
    } finally {
      sh('rm', '-f', container);
      execFileSync('docker', ['rmi', '-f', tag], { stdio: 'ignore' });
    }
  });

  it('refuses cacheKeyFiles outside the repository', () => {
    expect(() => parseRepoConfig('setup:\n  cacheKeyFiles: ["../x"]\n')).toThrow();
    expect(() => parseRepoConfig('setup:\n  cacheKeyFiles: ["/etc/passwd"]\n')).toThrow();
  });
});

describe('set-up progress', () => {
  it('tells the status comment whether the set-up was reused or ran', async () => {
    const comments: RunnerProgress[] = [];
    const r = new ProgressReporter(
      { runner: 'r1', phase: 'solving' },
      { job: async () => undefined, comment: async (p) => void comments.push(p) },
      { commentEveryMs: 60_000 },
    );
    r.onEvent({ type: 'setup_end', reusedKey: 'abc123def4567890'.repeat(4), durationMs: 412 });
    r.onEvent({ type: 'setup_end', durationMs: 61_400 });
    await r.close();
    expect(comments.map((c) => c.detail)).toEqual(['Set-up reused (key abc123def456…).', 'Set-up ran (61 s).']);
  });
});
