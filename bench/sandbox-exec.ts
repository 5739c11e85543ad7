/**
 * Per-command overhead of each sandbox: creation time, then the wall time of `true` (pure overhead) and of a
 * small real command, over N runs. Prints a table; asserts nothing.
 *   npx tsx bench/sandbox-exec.ts [runs=30]     (FROGNANO_SANDBOX_IMAGE picks the docker image; default the test image)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { BwrapSandbox } from '../src/sandbox/bwrap.js';
import { checkBwrap, checkDocker } from '../src/sandbox/check.js';
import { BwrapSandboxConfigSchema, DockerSandboxConfigSchema } from '../src/sandbox/config.js';
import { DockerSandbox } from '../src/sandbox/docker/index.js';
import { LocalSandbox } from '../src/sandbox/local.js';
import type { Sandbox } from '../src/sandbox/types.js';
import { summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 30);
const image = process.env.FROGNANO_SANDBOX_IMAGE ?? 'frognano-sandbox:test';

function stats(ms: number[]): string {
  const s = summarize(ms);
  return `mean ${s.mean.toFixed(1)} ms  p50 ${s.median.toFixed(1)}  p90 ${s.p90.toFixed(1)}  max ${s.max.toFixed(1)}`;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function bench(name: string, make: (dir: string) => Promise<Sandbox>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-'));
  try {
    let sb: Sandbox | undefined;
    const create = await time(async () => {
      sb = await make(dir);
    });
    const s = sb as Sandbox;
    await s.exec('true'); // warm-up
    const trueMs: number[] = [];
    const gitMs: number[] = [];
    await s.exec('git init -q && echo x > f && git add f');
    for (let i = 0; i < runs; i++) {
      trueMs.push(await time(() => s.exec('true')));
      gitMs.push(await time(() => s.exec('git status --short && python3 -c "pass"')));
    }
    const close = await time(() => s.close());
    console.log(`${name.padEnd(7)} create ${create.toFixed(0)} ms, close ${close.toFixed(0)} ms`);
    console.log(`${''.padEnd(7)} exec 'true'             ${stats(trueMs)}`);
    console.log(`${''.padEnd(7)} exec 'git status; py'   ${stats(gitMs)}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

console.log(`sandbox exec overhead, ${runs} runs each, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}`);
await bench('local', async (dir) => new LocalSandbox(dir));
const bw = await checkBwrap(BwrapSandboxConfigSchema.parse({ kind: 'bwrap' }));
if (bw.ok) await bench('bwrap', (dir) => BwrapSandbox.create(dir));
else console.log(`bwrap   skipped: ${bw.message}`);
const dk = await checkDocker(DockerSandboxConfigSchema.parse({ kind: 'docker', image }));
if (dk.ok) await bench('docker', (dir) => DockerSandbox.create(dir, { image }));
else console.log(`docker  skipped: ${dk.message}`);
