/**
 * Time from a round's start (solve() called) to the model's first request, for a Python repository whose set-up
 * makes a venv and installs a real package offline from a wheel in the repository
 * (`python3 -m venv .venv && .venv/bin/pip install --no-index ./vendor/<wheel>`):
 *   before: no snapshot cache (every round ran its set-up)
 *   cold:   the set-up runs and its snapshot is stored (the first round on a key)
 *   warm:   the snapshot is restored instead (every later round on the key)
 * The series are interleaved (before, cold, warm per run) on each sandbox kind; each round's model turn imports the
 * package, so a warm round that lost the venv shows as `import FAILED`. Prints a table; asserts nothing.
 *   npx tsx bench/warm-start.ts [runs=3]   (FROGNANO_SANDBOX_IMAGE picks the docker image; default the test image)
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ReplayBackend } from '../src/inference/replay.js';
import type { ModelBackend } from '../src/inference/types.js';
import { DEFAULT_KEY_FILES, SetupSnapshotCache, setupSnapshotKey } from '../src/leaf/setupSnapshot.js';
import { solve } from '../src/leaf/solve.js';
import { BwrapSandbox } from '../src/sandbox/bwrap.js';
import { checkBwrap, checkDocker } from '../src/sandbox/check.js';
import { BwrapSandboxConfigSchema, DockerSandboxConfigSchema } from '../src/sandbox/config.js';
import { DockerSandbox } from '../src/sandbox/docker/index.js';
import type { Sandbox } from '../src/sandbox/types.js';
import { commitAll, summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 3);
const image = process.env.FROGNANO_SANDBOX_IMAGE ?? 'frognano-sandbox:test';
const WHEEL = 'frogdemo-1.0.0-py3-none-any.whl';
const SETUP = [`python3 -m venv .venv && .venv/bin/pip install -q --no-index ./vendor/${WHEEL}`];
const REPOSITORY = '1/bench/warm-start';

/** A pure-Python wheel written with the host's python3 (zipfile): installing it needs no build backend, no network. */
function writeWheel(dir: string): void {
  const script = `
import base64, hashlib, sys, zipfile
files = {
  'frogdemo/__init__.py': 'def hello():\\n    return "hello from frogdemo"\\n',
  'frogdemo-1.0.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: frogdemo\\nVersion: 1.0.0\\n',
  'frogdemo-1.0.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: bench\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',
}
rec = [n + ',sha256=' + base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b'=').decode()
       + ',' + str(len(c.encode())) for n, c in files.items()]
files['frogdemo-1.0.0.dist-info/RECORD'] = '\\n'.join(rec + ['frogdemo-1.0.0.dist-info/RECORD,,']) + '\\n'
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    for n, c in files.items(): z.writestr(n, c)
`;
  execFileSync('python3', ['-c', script, path.join(dir, WHEEL)]);
}

async function fixtureRepo(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-warm-'));
  await mkdir(path.join(dir, 'vendor'));
  writeWheel(path.join(dir, 'vendor'));
  await writeFile(path.join(dir, 'requirements.txt'), 'frogdemo==1.0.0\n');
  await writeFile(path.join(dir, 'app.py'), 'import frogdemo\n\nprint(frogdemo.hello())\n');
  await writeFile(path.join(dir, '.gitignore'), '.venv/\n');
  commitAll(dir, 'fixture');
  return dir;
}

/** The replay model, noting when its first request came; its one tool call imports the installed package. */
function timedBackend(): { backend: ModelBackend; firstAt: () => number | undefined } {
  const replay = ReplayBackend.fromTurns([
    { content: '', tool_calls: [{ name: 'Bash', arguments: { command: '.venv/bin/python app.py' } }] },
    { content: 'done' },
  ]);
  let firstAt: number | undefined;
  const backend: ModelBackend = {
    info: () => replay.info(),
    generate: (m, t, o) => {
      firstAt ??= performance.now();
      return replay.generate(m, t, o);
    },
  };
  return { backend, firstAt: () => firstAt };
}

type Mode = 'before' | 'cold' | 'warm';

async function round(source: string, make: (d: string) => Promise<Sandbox>, cache: SetupSnapshotCache, mode: Mode) {
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: source, encoding: 'utf8' }).trim();
  const key = await setupSnapshotKey({
    repoDir: source,
    commit: head,
    repository: REPOSITORY,
    setupCommands: SETUP,
    network: 'off',
    environment: 'bench',
    keyFiles: [],
  });
  // cold: an empty cache, as on the first round of a key.
  if (mode === 'cold') await rm(cache.o.dir, { recursive: true, force: true });
  const snapshot =
    mode === 'before' ? undefined : { cache, repository: REPOSITORY, key, keyFiles: DEFAULT_KEY_FILES, mayStore: true };
  const { backend, firstAt } = timedBackend();
  const started = performance.now();
  const r = await solve({
    sourceDir: source,
    sandboxFactory: make,
    backend,
    task,
    setupCommands: SETUP,
    setupSnapshot: snapshot,
  });
  const ok = r.trajectory.steps[0]?.observations[0]?.observation.includes('hello from frogdemo') ?? false;
  if (mode === 'warm' && !r.setupReusedKey) throw new Error('the warm round did not restore the snapshot');
  return { ms: (firstAt() ?? Number.NaN) - started, ok };
}

const task = { title: 'bench', body: 'bench', repo: 'bench/warm-start', issueNumber: 1 };

async function benchKind(name: string, make: (d: string) => Promise<Sandbox>, source: string): Promise<void> {
  const cacheDir = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-setup-cache-'));
  const cache = new SetupSnapshotCache({ dir: cacheDir, maxBytes: 4 * 1024 ** 3, maxSnapshotBytes: 1024 ** 3 });
  const series: Record<Mode, number[]> = { before: [], cold: [], warm: [] };
  let imports = true;
  try {
    for (let i = 0; i < runs; i++) {
      for (const mode of ['before', 'cold', 'warm'] as const) {
        const r = await round(source, make, cache, mode);
        series[mode].push(r.ms);
        imports &&= r.ok;
      }
    }
    const size = (await cache.list()).reduce((n, f) => n + f.bytes, 0);
    const med = (m: Mode) => summarize(series[m]).median;
    const cell = (m: Mode) => `${(med(m) / 1000).toFixed(2)} s (min ${(summarize(series[m]).min / 1000).toFixed(2)})`;
    console.log(
      `${name.padEnd(7)} | ${cell('before').padEnd(20)} | ${cell('cold').padEnd(20)} | ${cell('warm').padEnd(20)} | ` +
        `${(med('before') / med('warm')).toFixed(1)}x | ${(size / 1024 ** 2).toFixed(1)} MB | ${imports ? 'ok' : 'import FAILED'}`,
    );
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
}

const source = await fixtureRepo();
try {
  console.log(`set-up: ${SETUP[0]}`);
  console.log(`runs per series: ${runs} (interleaved); CPUs ${os.cpus().length}, load ${os.loadavg()[0].toFixed(1)}`);
  console.log(
    'sandbox | before: no cache (median) | cold: set-up + store | warm: restore        | before/warm | snapshot | model sees the package',
  );
  const bw = await checkBwrap(BwrapSandboxConfigSchema.parse({ kind: 'bwrap' }));
  if (bw.ok) await benchKind('bwrap', (d) => BwrapSandbox.create(d), source);
  else console.log(`bwrap   | skipped: ${bw.message}`);
  const dk = await checkDocker(DockerSandboxConfigSchema.parse({ kind: 'docker', image }));
  const labels = { 'dev.frognano.bench': 'warm-start' };
  if (dk.ok) await benchKind('docker', (d) => DockerSandbox.create(d, { image, labels }), source);
  else console.log(`docker  | skipped: ${dk.message}`);
  console.log(`load after: ${os.loadavg()[0].toFixed(1)}`);
} finally {
  await rm(source, { recursive: true, force: true });
}
