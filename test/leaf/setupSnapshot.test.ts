/**
 * Set-up snapshots end to end on the real bwrap and docker sandboxes: a round that ran its set-up stores a snapshot
 * made inside the sandbox; the next round on the same key restores it instead (the model sees the files, the set-up
 * did not run again); a changed key file, a corrupt snapshot, a failed set-up and an oversized one behave as
 * docs/warm-starts.md says; verification sides restore it unless the patch touches a key file.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ReplayBackend } from '../../src/inference/replay.js';
import type { LeafEvent } from '../../src/leaf/events.js';
import { DEFAULT_KEY_FILES, SetupSnapshotCache, setupSnapshotKey } from '../../src/leaf/setupSnapshot.js';
import { touchesKeyFile, type SetupSnapshotUse } from '../../src/leaf/setUp.js';
import { solve, type SolveResult } from '../../src/leaf/solve.js';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox, reapStaleSandboxes } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { measureSide } from '../../src/verify/sides.js';
import type { VerifyOptions } from '../../src/verify/types.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { git, isolateHome, makeRepo, removeDir, tempDir } from './helpers.js';

isolateHome();

const docker = await dockerForTests();
const LABELS = { 'dev.frognano.test': `setup-snapshot-${randomUUID()}` };
const REPOSITORY = '42/acme/calc';
const SLOW_SETUP = 'sleep 5 && mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs';
const task = { title: 't', body: 'b', repo: 'acme/calc', issueNumber: 1 };

/** The model's first (and only) tool call shows what the set-up left: the marker and how many times it ran. */
function peekingBackend(): ReplayBackend {
  return ReplayBackend.fromTurns([
    { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'cat .venv/marker; wc -l < .venv/runs' } }] },
    { content: 'done' },
  ]);
}

function firstObservation(r: SolveResult): string {
  return r.trajectory.steps[0].observations[0].observation;
}

function describeKind(name: string, make: (dir: string) => Promise<Sandbox>, skip = false): void {
  (skip ? describe.skip : describe)(`set-up snapshots on ${name}`, () => {
    let source: string;
    let cacheDir: string;
    let cache: SetupSnapshotCache;
    let logs: { msg: string; fields?: Record<string, unknown> }[];
    beforeEach(async () => {
      source = await makeRepo({ 'requirements.txt': 'six==1.16\n', 'app.py': 'x = 1\n', '.gitignore': '.venv/\n' });
      cacheDir = await tempDir('fn-setup-cache-');
      cache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1024 ** 3, maxSnapshotBytes: 64 * 1024 ** 2 });
      logs = [];
    });
    afterEach(async () => {
      if (name === 'docker') await reapStaleSandboxes(docker!, 0, { labels: LABELS });
      await removeDir(source);
      await removeDir(cacheDir);
    });

    async function use(setupCommands: string[]): Promise<SetupSnapshotUse> {
      const key = await setupSnapshotKey({
        repoDir: source,
        commit: git(source, 'rev-parse', 'HEAD').trim(),
        repository: REPOSITORY,
        setupCommands,
        network: 'off',
        environment: name,
        keyFiles: [],
      });
      return {
        cache,
        repository: REPOSITORY,
        key,
        keyFiles: DEFAULT_KEY_FILES,
        mayStore: true,
        log: (msg, f) => logs.push({ msg, fields: f }),
      };
    }

    async function round(setupCommands: string[], snapshot: SetupSnapshotUse | undefined) {
      const events: LeafEvent[] = [];
      const result = await solve({
        sourceDir: source,
        sandboxFactory: make,
        backend: peekingBackend(),
        task,
        setupCommands,
        setupSnapshot: snapshot,
        onEvent: (e) => events.push(e),
      });
      const setupEnd = events.find((e) => e.type === 'setup_end');
      return { result, setupEnd: setupEnd?.type === 'setup_end' ? setupEnd : undefined };
    }

    it('stores the set-up of a round and restores it in the next instead of running it', async () => {
      const snap = await use([SLOW_SETUP]);
      const cold = await round([SLOW_SETUP], snap);
      expect(cold.result.setupResults.map((r) => r.exitCode)).toEqual([0]);
      expect(cold.result.setupReusedKey).toBeUndefined();
      expect(cold.setupEnd?.durationMs).toBeGreaterThanOrEqual(5000);
      expect((await cache.list()).map((f) => path.basename(f.file))).toEqual([`${snap.key}.tgz`]);

      const warm = await round([SLOW_SETUP], snap);
      expect(warm.result.setupReusedKey).toBe(snap.key);
      expect(warm.result.setupResults).toEqual([]);
      expect(warm.setupEnd).toMatchObject({ reusedKey: snap.key });
      // Well under the set-up's own 5 s even on a loaded machine (two short execs: check, then extract).
      expect(warm.setupEnd!.durationMs).toBeLessThan(3000);
      // The model's sandbox has what the set-up made, and the set-up ran once in all.
      expect(firstObservation(warm.result)).toMatch(/^Exit code: 0\nSTDOUT:\nbuilt\n1\n/);
      // Nothing the restore brought in is part of the patch (it is ignored, as the set-up's output was).
      expect(warm.result.patch).toBe('');
    }, 120_000);

    it('a changed key file runs the set-up once and stores a new snapshot', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const first = await use(setup);
      await round(setup, first);
      await writeFile(path.join(source, 'requirements.txt'), 'six==1.17\n');
      git(source, 'commit', '-qam', 'bump six');
      const second = await use(setup);
      expect(second.key).not.toBe(first.key);
      const ran = await round(setup, second);
      expect(ran.result.setupResults.map((r) => r.exitCode)).toEqual([0]);
      expect(firstObservation(ran.result)).toMatch(/STDOUT:\nbuilt\n1\n/);
      expect((await cache.list()).length).toBe(2);
      const again = await round(setup, second);
      expect(again.result.setupReusedKey).toBe(second.key);
    }, 120_000);

    it('a corrupt snapshot falls back to running the set-up, and a good one replaces it', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const snap = await use(setup);
      const file = cache.fileFor(REPOSITORY, snap.key);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, Buffer.from('\x1f\x8b\x08 this is not a gzip stream at all'));
      const r = await round(setup, snap);
      expect(r.result.setupReusedKey).toBeUndefined();
      expect(r.result.setupResults.map((x) => x.exitCode)).toEqual([0]);
      expect(firstObservation(r.result)).toMatch(/STDOUT:\nbuilt\n1\n/);
      expect(logs.map((l) => l.msg)).toEqual([
        'set-up snapshot not restored; running the set-up',
        'set-up snapshot stored',
      ]);
      expect(String(logs[0].fields?.reason)).toMatch(/damaged: no header/);
      expect((await round(setup, snap)).result.setupReusedKey).toBe(snap.key);
    }, 120_000);

    it('a truncated or altered snapshot fails its header check: the set-up runs, the file is replaced', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const snap = await use(setup);
      await round(setup, snap);
      const file = cache.fileFor(REPOSITORY, snap.key);
      const good = await readFile(file);
      expect(good.subarray(0, 25).toString()).toBe('frognano-setup-snapshot 2');
      const damaged: [string, Buffer][] = [
        ['truncated', good.subarray(0, good.length - 7)],
        // One byte of the archive's gzip trailer flipped: gzip would still list it, the sha256 does not match.
        ['altered', Buffer.concat([good.subarray(0, good.length - 1), Buffer.from([good[good.length - 1]! ^ 1])])],
      ];
      for (const [what, bytes] of damaged) {
        logs = [];
        await writeFile(file, bytes);
        const r = await round(setup, snap);
        expect({ what, reused: r.result.setupReusedKey }).toEqual({ what, reused: undefined });
        expect(firstObservation(r.result)).toMatch(/STDOUT:\nbuilt\n1\n/);
        expect(String(logs[0].fields?.reason)).toMatch(
          what === 'truncated' ? /damaged: \d+ bytes where the header says/ : /damaged: .*sha256/,
        );
        expect(logs.map((l) => l.msg)).toEqual([
          'set-up snapshot not restored; running the set-up',
          'set-up snapshot stored',
        ]);
      }
      expect((await round(setup, snap)).result.setupReusedKey).toBe(snap.key);
    }, 120_000);

    it("a follow-up round's snapshot is its pull request's own: later rounds of it restore it, nothing else", async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const snap = await use(setup);
      const pull3 = { ...snap, scope: 'pull-3' as const };
      const ran = await round(setup, pull3);
      expect(ran.result.setupReusedKey).toBeUndefined();
      expect((await cache.list()).map((f) => path.basename(f.file))).toEqual([`pull-3.${snap.key}.tgz`]);
      // The same pull request's next round restores it (the set-up ran once in all)...
      const again = await round(setup, pull3);
      expect(again.result.setupReusedKey).toBe(snap.key);
      expect(firstObservation(again.result)).toMatch(/STDOUT:\nbuilt\n1\n/);
      // ...another pull request's round, a first attempt and a verification side (no scope) do not.
      expect((await round(setup, { ...snap, scope: 'pull-4' as const, mayStore: false })).result.setupReusedKey).toBe(
        undefined,
      );
      expect((await round(setup, { ...snap, mayStore: false })).result.setupReusedKey).toBeUndefined();
      // A first attempt's snapshot of the key is restored by every round, a follow-up's first.
      await round(setup, snap);
      expect(logs.filter((l) => l.msg === 'set-up restored from a snapshot').map((l) => l.fields?.scope)).toEqual([
        'pull-3',
      ]);
      logs = [];
      expect((await round(setup, pull3)).result.setupReusedKey).toBe(snap.key);
      expect(logs.map((l) => [l.msg, l.fields?.scope])).toEqual([['set-up restored from a snapshot', 'repository']]);
    }, 120_000);

    it('a verification side (mayStore false) restores but never stores', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const snap = await use(setup);
      const verifySide = { ...snap, mayStore: false };
      const ran = await round(setup, verifySide);
      expect(ran.result.setupResults.map((x) => x.exitCode)).toEqual([0]);
      expect(await cache.list()).toEqual([]);
      await round(setup, snap);
      expect((await round(setup, verifySide)).result.setupReusedKey).toBe(snap.key);
    }, 120_000);

    it('never stores a snapshot when a set-up command failed', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker', 'echo broken >&2; exit 3'];
      const snap = await use(setup);
      const r = await round(setup, snap);
      expect(r.result.setupResults.map((x) => x.exitCode)).toEqual([0, 3]);
      expect(await cache.list()).toEqual([]);
      expect((await round(setup, snap)).result.setupResults.length).toBe(2);
    }, 120_000);

    it('verification sides restore the snapshot unless the patch touches a key file', async () => {
      const setup = ['mkdir -p .venv && echo built > .venv/marker && echo run >> .venv/runs'];
      const snap = await use(setup);
      await round(setup, snap);
      const o = {
        repoDir: source,
        baseCommit: git(source, 'rev-parse', 'HEAD').trim(),
        setupCommands: setup,
        testCommands: ['cat .venv/marker; wc -l < .venv/runs; cat app.py'],
        setupNetwork: false,
        reportGlobs: [],
        sandboxFactory: make,
        setupTimeoutMs: 60_000,
        testTimeoutMs: 60_000,
        setupSnapshot: snap,
      } as unknown as VerifyOptions;
      const signal = new AbortController().signal;
      const appPatch = 'diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n';
      const patched = await measureSide({ label: 'patched', patch: appPatch }, o, signal);
      expect(patched.setupReused).toBe(true);
      expect(patched.setup).toEqual([]);
      expect(patched.tests[0].outputTail).toMatch(/^built\n1\nx = 2\s*$/);

      const reqPatch =
        'diff --git a/requirements.txt b/requirements.txt\n--- a/requirements.txt\n+++ b/requirements.txt\n' +
        '@@ -1 +1 @@\n-six==1.16\n+six==1.17\n';
      const bumped = await measureSide({ label: 'patched', patch: reqPatch }, o, signal);
      expect(bumped.setupReused).toBeUndefined();
      expect(bumped.setup.map((r) => r.exitCode)).toEqual([0]);
      expect(bumped.tests[0].outputTail).toMatch(/^built\n1\nx = 1\s*$/);
      // Sides never store: still the one snapshot of the round.
      expect((await cache.list()).length).toBe(1);
    }, 120_000);
  });
}

describeKind('bwrap', (dir) => BwrapSandbox.create(dir));
describeKind(
  'docker',
  (dir) => DockerSandbox.create(dir, { image: TEST_IMAGE, labels: LABELS, memoryMb: 512 }, { docker: docker! }),
  !docker,
);

describe('set-up snapshot limits (bwrap)', () => {
  let source: string;
  let cacheDir: string;
  beforeEach(async () => {
    source = await makeRepo({ 'package.json': '{}\n', '.gitignore': 'out/\n' });
    cacheDir = await tempDir('fn-setup-cache-');
  });
  afterEach(async () => {
    await removeDir(source);
    await removeDir(cacheDir);
  });

  async function runRound(cache: SetupSnapshotCache, key: string, setup: string[]) {
    const logs: string[] = [];
    const snap = {
      cache,
      repository: REPOSITORY,
      key,
      keyFiles: DEFAULT_KEY_FILES,
      mayStore: true,
      log: (m: string, f?: object) => logs.push(`${m} ${JSON.stringify(f)}`),
    };
    await solve({
      sourceDir: source,
      sandboxFactory: (dir) => BwrapSandbox.create(dir),
      backend: ReplayBackend.fromTurns([{ content: 'done' }]),
      task,
      setupCommands: setup,
      setupSnapshot: snap,
    });
    return logs;
  }

  it('does not store a snapshot over the size cap', async () => {
    const cache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1024 ** 3, maxSnapshotBytes: 4096 });
    const logs = await runRound(cache, 'a'.repeat(64), ['mkdir -p out && head -c 200000 /dev/urandom > out/blob']);
    expect(logs.join('\n')).toMatch(/no set-up snapshot stored .*larger than/);
    expect(await cache.list()).toEqual([]);
  }, 60_000);

  it('does not store a snapshot when the set-up changed a tracked file', async () => {
    const cache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1024 ** 3, maxSnapshotBytes: 1024 ** 2 });
    const logs = await runRound(cache, 'b'.repeat(64), ['echo "{\\"x\\":1}" > package.json']);
    expect(logs.join('\n')).toMatch(/changed tracked files/);
    expect(await cache.list()).toEqual([]);
  }, 60_000);

  it('evicts the least recently used snapshots past the disk budget, never the one just stored', async () => {
    const cache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 1, maxSnapshotBytes: 1024 ** 2 });
    await runRound(cache, 'c'.repeat(64), ['mkdir -p out && echo one > out/a']);
    expect((await cache.list()).map((f) => path.basename(f.file))).toEqual([`${'c'.repeat(64)}.tgz`]);
    await runRound(cache, 'd'.repeat(64), ['mkdir -p out && echo two > out/a']);
    expect((await cache.list()).map((f) => path.basename(f.file))).toEqual([`${'d'.repeat(64)}.tgz`]);
  }, 60_000);
});

describe('set-up snapshot key', () => {
  let source: string;
  afterEach(async () => removeDir(source));
  const keyOf = (extra: Partial<Parameters<typeof setupSnapshotKey>[0]> = {}) =>
    setupSnapshotKey({
      repoDir: source,
      commit: git(source, 'rev-parse', 'HEAD').trim(),
      repository: REPOSITORY,
      setupCommands: ['pip install -r requirements.txt'],
      network: 'off',
      environment: 'bwrap',
      keyFiles: [],
      ...extra,
    });

  it('follows the key files at the commit, the set-up, the image and the repository, nothing else', async () => {
    source = await makeRepo({ 'requirements.txt': 'a\n', 'src/app.py': 'x\n', 'web/package.json': '{}\n' });
    const base = await keyOf();
    expect(await keyOf()).toBe(base);
    expect(await keyOf({ repository: '43/acme/calc' })).not.toBe(base);
    expect(await keyOf({ setupCommands: ['true'] })).not.toBe(base);
    expect(await keyOf({ environment: 'docker:other' })).not.toBe(base);
    expect(await keyOf({ network: 'registries' })).not.toBe(base);
    // A source file does not change it; a nested package.json does; the working tree is never read.
    await writeFile(path.join(source, 'src/app.py'), 'y\n');
    git(source, 'commit', '-qam', 'src');
    expect(await keyOf()).toBe(base);
    await writeFile(path.join(source, 'requirements.txt'), 'uncommitted\n');
    expect(await keyOf()).toBe(base);
    await writeFile(path.join(source, 'web/package.json'), '{"a":1}\n');
    git(source, 'commit', '-qam', 'web');
    const web = await keyOf();
    expect(web).not.toBe(base);
    // `setup.cacheKeyFiles` adds files of the repository's choosing.
    expect(await keyOf({ keyFiles: ['src/*.py'] })).not.toBe(web);
  });

  it('names a symlinked key file by its link, never following it', async () => {
    source = await makeRepo({ 'real.json': '{}\n' });
    await symlink('real.json', path.join(source, 'package.json'));
    git(source, 'add', '-A');
    git(source, 'commit', '-qm', 'link');
    const key = await keyOf();
    // What the link points at is no key file: changing it leaves the key as it was.
    await writeFile(path.join(source, 'real.json'), '{"changed":true}\n');
    git(source, 'commit', '-qam', 'target');
    expect(await keyOf()).toBe(key);
  });

  it('tells which paths are key files', () => {
    expect(touchesKeyFile(['requirements.txt'], DEFAULT_KEY_FILES)).toBe(true);
    expect(touchesKeyFile(['svc/requirements-dev.txt'], DEFAULT_KEY_FILES)).toBe(true);
    expect(touchesKeyFile(['.npmrc'], DEFAULT_KEY_FILES)).toBe(true);
    expect(touchesKeyFile(['src/package.json.md', 'app.py'], DEFAULT_KEY_FILES)).toBe(false);
    expect(touchesKeyFile(['tools/gen.sh'], [...DEFAULT_KEY_FILES, 'tools/**'])).toBe(true);
  });
});
