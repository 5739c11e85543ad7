/**
 * verifyChange on real sandboxes (bwrap always; docker with the test image) and real git fixture repositories.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BwrapSandbox } from '../../src/sandbox/bwrap.js';
import { DockerSandbox } from '../../src/sandbox/docker/index.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { verifyChange, FileBaseResultCache } from '../../src/verify/index.js';
import type { VerifyOptions } from '../../src/verify/types.js';
import { git, makeRepo, tempDir } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { CALC, TESTS } from '../support/calcRepo.js';

const docker = await dockerForTests();
const LABEL = { 'dev.frognano.test': `hverify-${randomBytes(6).toString('hex')}` };
const LIMITS = { memoryMb: 512, pidsLimit: 256, tmpSizeMb: 64, workspaceMb: 1024 };
type Factory = (ws: string) => Promise<Sandbox>;
const factories: [string, Factory][] = [['bwrap', (ws) => BwrapSandbox.create(ws, LIMITS)]];
if (docker)
  factories.push([
    'docker',
    (ws) => DockerSandbox.create(ws, { image: TEST_IMAGE, cpus: 1, labels: LABEL, ...LIMITS }, { docker }),
  ]);

/** The patch that turns `from` into `to` in a copy of repo (as the runner's staged diff). */
function diffOf(repo: string, edit: (dir: string) => void): string {
  edit(repo);
  git(repo, 'add', '-A');
  const patch = git(repo, 'diff', '--cached', '--binary', 'HEAD');
  git(repo, 'reset', '-q', '--hard', 'HEAD');
  return patch;
}

function options(repo: string, factory: Factory, over: Partial<VerifyOptions>): VerifyOptions {
  return {
    repoDir: repo,
    baseCommit: git(repo, 'rev-parse', 'HEAD').trim(),
    patch: '',
    setupCommands: [],
    testCommands: ['python3 -m unittest -v'],
    setupNetwork: false,
    reportGlobs: [],
    sandboxFactory: factory,
    environmentKey: 'test',
    security: false,
    secrets: false,
    repository: repo,
    timeoutMs: 120_000,
    setupTimeoutMs: 60_000,
    testTimeoutMs: 60_000,
    ...over,
  };
}

const write = (dir: string, rel: string, text: string) =>
  execFileSync('sh', ['-c', 'cat > "$1"', 'w', path.join(dir, rel)], { input: text });

afterAll(async () => {
  if (!docker) return;
  for (const c of await docker.listContainers({
    all: true,
    filters: { label: [`dev.frognano.test=${LABEL['dev.frognano.test']}`] },
  }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => undefined);
});

describe.each(factories)('verifyChange on %s', (name, factory) => {
  it('unittest: the fix is named fixed, the passing test stays, success; the working tree is not used', async () => {
    const repo = await makeRepo({ 'calc.py': CALC, 'test_calc.py': TESTS });
    const patch = diffOf(repo, (d) => write(d, 'calc.py', CALC.replace('return a - b', 'return a + b')));
    // The runner's clone may already hold the staged patch: the base side must still be the commit.
    write(repo, 'calc.py', CALC.replace('return a - b', 'return a + b'));
    const v = await verifyChange(options(repo, factory, { patch }));
    expect(v.base.tests[0].source).toBe('unittest-log');
    expect(v.fixed.map((t) => t.id)).toEqual([expect.stringContaining('test_add')]);
    expect(v.regressions).toEqual([]);
    expect(v.conclusion).toBe('success');
    expect(v.base.tests[0].exitCode).not.toBe(0);
    expect(v.patched.tests[0].exitCode).toBe(0);
  }, 180_000);

  // bwrap runs the host's /usr/bin/python3: .ci/run installs Debian's python3-pytest, as the image has it.
  it('pytest: JUnit comes through PYTEST_ADDOPTS; a fix that breaks another test is a failure naming both', async () => {
    const repo = await makeRepo({ 'calc.py': CALC, 'test_calc.py': TESTS });
    const patch = diffOf(repo, (d) =>
      write(d, 'calc.py', 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n'),
    );
    const v = await verifyChange(
      options(repo, factory, { patch, testCommands: ['python3 -m pytest -q -p no:cacheprovider'] }),
    );
    expect(v.patched.tests[0].source).toBe('junit');
    expect(v.fixed.map((t) => t.id)).toEqual([expect.stringContaining('test_add')]);
    expect(v.regressions.map((t) => t.id)).toEqual([expect.stringContaining('test_sub')]);
    expect(v.conclusion).toBe('failure');
  }, 180_000);

  it('the ignored interpreter the model replaced is rebuilt by the set-up: the failing test still fails', async () => {
    const repo = await makeRepo({ '.gitignore': '.venv/\n', 'calc.py': CALC, 'test_calc.py': TESTS });
    // In the model's workspace .venv/bin/python printed OK; .venv is ignored, so only this reaches the patch.
    const patch = diffOf(repo, (d) => write(d, 'NOTES.md', 'fixed\n'));
    const v = await verifyChange(
      options(repo, factory, {
        patch,
        setupCommands: ['mkdir -p .venv/bin && ln -sf /usr/bin/python3 .venv/bin/python'],
        testCommands: ['.venv/bin/python -m unittest -v'],
      }),
    );
    expect(v.patched.setup[0].exitCode).toBe(0);
    expect(v.patched.tests[0].exitCode).not.toBe(0);
    expect(v.fixed).toEqual([]);
    expect(v.conclusion).toBe('failure');
  }, 180_000);

  it('a patch that skips the failing test instead of fixing the code is named as doing so, never fixed', async () => {
    const repo = await makeRepo({ 'calc.py': CALC, 'test_calc.py': TESTS });
    const skipped = TESTS.replace('    def test_add', "    @unittest.skip('flaky')\n    def test_add");
    const patch = diffOf(repo, (d) => write(d, 'test_calc.py', skipped));
    const v = await verifyChange(options(repo, factory, { patch }));
    expect(v.fixed).toEqual([]);
    expect(v.stillFailing.map((t) => t.id)).toEqual([expect.stringContaining('test_add')]);
    const file = v.testFiles.find((f) => f.file === 'test_calc.py');
    expect(file).toMatchObject({ change: 'modified' });
    expect(file!.newlySkipped).toEqual([expect.stringContaining('test_add')]);
    expect(v.baseTestsOnPatch).toBeDefined(); // the base's test file ran against the patched code too
    expect(v.conclusion).toBe('failure');
  }, 180_000);

  it('security and secrets findings on exactly the added lines fail the verdict', async () => {
    const repo = await makeRepo({ 'calc.py': CALC, 'test_calc.py': TESTS });
    const risky = `${CALC.replace('return a - b', 'return a + b')}\n\ndef run(cmd):\n    import subprocess\n    return subprocess.call(cmd, shell=True)\n\n\nKEY = "AKIAQWERTYUIOPASDFGH"\n`;
    const patch = diffOf(repo, (d) => write(d, 'calc.py', risky));
    const v = await verifyChange(options(repo, factory, { patch, security: true, secrets: true }));
    const lines = risky.split('\n');
    const at = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
    expect(v.fixed.map((t) => t.id)).toEqual([expect.stringContaining('test_add')]);
    expect(v.scans.filter((s) => !s.ran)).toEqual([]);
    expect(v.findings.map((f) => [f.kind, f.file, f.line])).toEqual(
      expect.arrayContaining([
        ['security', 'calc.py', at('shell=True')],
        ['secret', 'calc.py', at('AKIA')],
      ]),
    );
    expect(v.findings.every((f) => [at('shell=True'), at('AKIA')].includes(f.line))).toBe(true);
    expect(JSON.stringify(v)).not.toContain('AKIAQWERTYUIOPASDFGH');
    expect(v.scans.map((s) => [s.tool, s.ran])).toEqual(
      expect.arrayContaining([
        ['bandit', true],
        ['secrets', true],
      ]),
    );
    expect(v.conclusion).toBe('failure');
  }, 180_000);

  it('a patch that does not apply is a patched side not run, never a throw; the base is cached once', async () => {
    const repo = await makeRepo({ 'calc.py': CALC, 'test_calc.py': TESTS });
    const cache = new FileBaseResultCache(path.join(await tempDir('fn-verify-cache-'), 'c'));
    const bad = 'diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n';
    const v = await verifyChange(options(repo, factory, { patch: bad, cache }));
    expect(v.patched.notRun).toMatch(/does not apply/);
    expect(v.base.cached).toBeUndefined();
    expect(v.conclusion).not.toBe('success');
    const again = await verifyChange(options(repo, factory, { patch: bad, cache }));
    expect(again.base.cached).toBe(true);
    expect(again.base.tests).toEqual(v.base.tests);
    await fs.rm(repo, { recursive: true, force: true });
  }, 180_000);
});
