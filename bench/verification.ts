/**
 * What verification costs a round: a Python repository with a real test suite (a small package, 30 tests, one
 * failing on the base and fixed by the patch), measured three ways, interleaved so a shared machine's load falls
 * on each series alike:
 *   baseline  what a round did before: one sandbox on a copy of the repository, set-up then tests (solve's path)
 *   cold      verifyChange with no cache: base and base + patch, each a fresh sandbox with set-up and tests
 *   cached    verifyChange with the base side in the file base-result cache: only base + patch is measured
 *
 *   npx tsx bench/verification.ts [runs=3] [--sandbox bwrap|docker] [--setup CMD]
 *
 * The tests run under pytest when the sandbox's python3 has it, else under unittest (bwrap shows the host's
 * /usr/bin/python3); the line above the figures says which. docker uses FROGNANO_SANDBOX_IMAGE (default
 * frognano-sandbox:test).
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runBotCommand, runSetupCommands } from '../src/leaf/botCommands.js';
import { DEFAULT_LIMITS } from '../src/leaf/limits.js';
import { prepareWorkspace } from '../src/leaf/workspace.js';
import { createSandbox, type SandboxConfigInput } from '../src/sandbox/index.js';
import { FileBaseResultCache } from '../src/verify/cache.js';
import { verifyChange } from '../src/verify/index.js';
import type { Verdict, VerifyOptions } from '../src/verify/types.js';
import { commitAll, summarize } from './lib.js';

const { values, positionals } = parseArgs({
  options: { sandbox: { type: 'string', default: 'bwrap' }, setup: { type: 'string' } },
  allowPositionals: true,
});
const runs = Number(positionals[0] ?? 3);
const image = process.env.FROGNANO_SANDBOX_IMAGE ?? 'frognano-sandbox:test';
const sandboxCfg: SandboxConfigInput =
  values.sandbox === 'docker' ? { kind: 'docker', image } : { kind: 'bwrap' as const };
const setup = values.setup ?? 'python3 -m venv .venv --system-site-packages';
/** The tests run in what the set-up made (the default set-up's venv); another set-up gets the plain python3. */
const python = values.setup === undefined ? '.venv/bin/python' : 'python3';

/** Ten tests per module; `clamp` has the bug the patch fixes. */
const MODULES: Record<string, { code: string; tests: [string, string][] }> = {
  numbers: {
    code: 'def clamp(x, lo, hi):\n    return max(lo, min(x, lo))\n\n\ndef add(a, b):\n    return a + b\n',
    tests: [
      ['clamp_inside', 'self.assertEqual(numbers.clamp(5, 0, 10), 5)'],
      ...Array.from({ length: 9 }, (_, i): [string, string] => [
        `add_${i}`,
        `self.assertEqual(numbers.add(${i}, 2), ${i + 2})`,
      ]),
    ],
  },
  text: {
    code: 'def shout(s):\n    return s.upper() + "!"\n',
    tests: Array.from({ length: 10 }, (_, i): [string, string] => [
      `shout_${i}`,
      `self.assertEqual(text.shout("a" * ${i}), "A" * ${i} + "!")`,
    ]),
  },
  shapes: {
    code: 'def area(w, h):\n    return w * h\n',
    tests: Array.from({ length: 10 }, (_, i): [string, string] => [
      `area_${i}`,
      `self.assertEqual(shapes.area(${i}, 3), ${i * 3})`,
    ]),
  },
};

async function makeRepo(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'pkg'), { recursive: true });
  await mkdir(path.join(dir, 'tests'));
  await writeFile(path.join(dir, 'pkg', '__init__.py'), '');
  await writeFile(path.join(dir, 'tests', '__init__.py'), '');
  await writeFile(path.join(dir, '.gitignore'), '.venv/\n__pycache__/\n');
  for (const [name, m] of Object.entries(MODULES)) {
    await writeFile(path.join(dir, 'pkg', `${name}.py`), m.code);
    const cases = m.tests.map(([t, body]) => `    def test_${t}(self):\n        ${body}\n`).join('\n');
    await writeFile(
      path.join(dir, 'tests', `test_${name}.py`),
      `import unittest\n\nfrom pkg import ${name}\n\n\nclass Test${name}(unittest.TestCase):\n${cases}`,
    );
  }
  commitAll(dir, 'base');
}

/** The fix, as `git diff` writes it. */
function fixPatch(dir: string): string {
  const file = path.join(dir, 'pkg', 'numbers.py');
  spawnSync('sed', ['-i', 's/min(x, lo)/min(x, hi)/', file]);
  const patch = spawnSync('git', ['diff'], { cwd: dir, encoding: 'utf8' }).stdout;
  spawnSync('git', ['checkout', '-q', '--', '.'], { cwd: dir });
  return patch;
}

/** pytest when the sandbox's python3 has it (the docker image does; a bare host may not). */
async function testCommand(dir: string): Promise<string> {
  const ws = await prepareWorkspace(dir);
  const sandbox = await createSandbox(sandboxCfg, ws.repoDir);
  try {
    const r = await sandbox.exec('python3 -c "import pytest"', { clean: true, timeoutMs: 60_000 });
    return r.exitCode === 0 ? `${python} -m pytest -q -p no:cacheprovider tests` : `${python} -m unittest -v`;
  } finally {
    await sandbox.close();
    await ws.cleanup();
  }
}

/** The round before verification: the repository copied, one sandbox, set-up then tests. */
async function baseline(dir: string, test: string): Promise<number> {
  const t = performance.now();
  const ws = await prepareWorkspace(dir);
  const sandbox = await createSandbox(sandboxCfg, ws.repoDir);
  try {
    const o = { timeoutMs: DEFAULT_LIMITS.testTimeoutMs };
    const { results } = await runSetupCommands(sandbox, [setup], o);
    const r = await runBotCommand(sandbox, 'test', test, o);
    if (results[0]?.exitCode !== 0) throw new Error(`set-up failed: ${results[0]?.outputTail}`);
    if (r.exitCode !== 1) throw new Error(`expected the base's one failing test, got exit ${r.exitCode}`);
  } finally {
    await sandbox.close();
    await ws.cleanup();
  }
  return performance.now() - t;
}

async function verify(o: VerifyOptions): Promise<{ ms: number; verdict: Verdict }> {
  const t = performance.now();
  const verdict = await verifyChange(o);
  const ms = performance.now() - t;
  if (verdict.conclusion !== 'success' || verdict.fixed.length !== 1)
    throw new Error(`unexpected verdict: ${verdict.headline}`);
  return { ms, verdict };
}

function report(label: string, ms: number[], base: number): void {
  const { median, min } = summarize(ms);
  const ratio = `${(median / base).toFixed(2)}x baseline`;
  console.log(
    `${label.padEnd(40)} median ${(median / 1000).toFixed(2).padStart(6)} s   min ${(min / 1000).toFixed(2).padStart(6)} s   ${ratio}`,
  );
}

const work = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-verify-'));
try {
  const repo = path.join(work, 'repo');
  await makeRepo(repo);
  const patch = fixPatch(repo);
  const test = await testCommand(repo);
  const baseCommit = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' }).stdout.trim();
  const options = (cache?: FileBaseResultCache): VerifyOptions => ({
    repoDir: repo,
    baseCommit,
    patch,
    setupCommands: [setup],
    testCommands: [test],
    setupNetwork: false,
    reportGlobs: [],
    sandboxFactory: (ws) => createSandbox(sandboxCfg, ws),
    environmentKey: sandboxCfg.kind,
    security: false,
    secrets: false,
    repository: repo,
    timeoutMs: 30 * 60_000,
    setupTimeoutMs: DEFAULT_LIMITS.setupTimeoutMs,
    testTimeoutMs: DEFAULT_LIMITS.testTimeoutMs,
    ...(cache ? { cache } : {}),
  });
  const cache = new FileBaseResultCache(path.join(work, 'cache'));
  // Fills the cache; not counted.
  const primed = await verify(options(cache));
  const series = { baseline: [] as number[], cold: [] as number[], cached: [] as number[] };
  let hits = 0;
  for (let i = 0; i < runs; i++) {
    series.baseline.push(await baseline(repo, test));
    series.cold.push((await verify(options())).ms);
    const c = await verify(options(cache));
    series.cached.push(c.ms);
    if (c.verdict.base.cached) hits++;
  }
  const tests = primed.verdict.base.tests[0]?.tests.length ?? 0;
  console.log(
    `verification, ${values.sandbox} sandbox, ${runs} runs interleaved, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}`,
  );
  console.log(`set-up: ${setup}; tests: ${test} (${tests} tests, source ${primed.verdict.base.tests[0]?.source})`);
  const base = summarize(series.baseline).median;
  report("baseline: the round's one sandbox", series.baseline, base);
  report('verification cold (base + patched)', series.cold, base);
  report(`verification, base cached (${hits}/${runs} hits)`, series.cached, base);
  console.log('(security and secrets scans off: the figures are the sides alone)');
} finally {
  await rm(work, { recursive: true, force: true });
}
