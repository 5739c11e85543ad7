/**
 * The wall time of `frognano eval` on the test suite's three fixture SWE-bench instances (images built FROM the
 * sandbox test image, test/cli/evalFixtures.ts) with the scripted model: 2 workers, beside the same run on 1
 * worker. With a scripted model this is eval's own overhead per instance (preflight container, copying /testbed out
 * of the image, the workspace copy, the sandbox, three tool calls, the patch), not a model's time.
 *   npx tsx bench/eval-fixtures.ts [runs=2]
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FIX_SCRIPT, FIXTURE_ACTIVATION, prepareFixtures } from '../test/cli/evalFixtures.js';
import { summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 2);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'frognano.js');

const work = await mkdtemp(path.join(os.tmpdir(), 'fn-bench-eval-'));
try {
  const fx = await prepareFixtures(work);
  const script = path.join(work, 'fix.json');
  await writeFile(script, JSON.stringify(FIX_SCRIPT));
  const series: Record<string, number[]> = { '2 workers': [], '1 worker (baseline)': [] };
  const perInstance: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Interleaved, so a change in the machine's load hits both series alike.
    for (const [label, workers] of [
      ['2 workers', '2'],
      ['1 worker (baseline)', '1'],
    ] as const) {
      const out = path.join(work, `out-${i}-${workers}`);
      const args = ['eval', '--dataset', fx.dataset, '--out', out, '--image-template', fx.template];
      const t = performance.now();
      const r = spawnSync(
        process.execPath,
        [bin, ...args, '--activate', FIXTURE_ACTIVATION, '--replay', script, '--workers', workers],
        {
          encoding: 'utf8',
        },
      );
      series[label].push(performance.now() - t);
      if (r.status !== 0) throw new Error(`frognano eval exited ${r.status}: ${r.stderr}`);
      const summary = JSON.parse(await readFile(path.join(out, 'eval-summary.json'), 'utf8'));
      for (const inst of summary.instances) perInstance.push(inst.wall_sec * 1000);
    }
  }
  const load = os.loadavg()[0].toFixed(1);
  console.log(`frognano eval, 3 fixture instances, scripted model (${os.cpus().length} CPUs, load ${load}):`);
  for (const [label, ms] of Object.entries(series)) {
    const { median, min } = summarize(ms);
    console.log(
      `  ${label.padEnd(22)} median ${(median / 1000).toFixed(1)} s   min ${(min / 1000).toFixed(1)} s   (${runs} runs)`,
    );
  }
  const { median } = summarize(perInstance);
  console.log(`  solve() per instance (trajectory elapsed): median ${(median / 1000).toFixed(1)} s`);
} finally {
  await rm(work, { recursive: true, force: true });
}
