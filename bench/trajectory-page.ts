/**
 * The run page's cost at the size issue #21 sets: a 100-step round whose trajectory JSON is about 1 MB.
 *   render     renderRunPage alone (the round already in memory)
 *   handler    the whole /runs handler over loopback HTTP: read the round from a local trajectory store, validate
 *              it, render, send (no sign-in: the permission check is one cached GitHub call, measured elsewhere)
 * Prints p50/p95 render ms and the page's bytes beside the targets (200 ms, 2 MB).
 *
 * Then the hostile rounds of issue #31, each in its own process (bench/trajectory-page-hostile.ts) so its peak memory
 * is its own: a 2.7M-line empty patch, tool-call arguments nested 6,000 arrays deep, 20,000 steps; rendered alone and
 * through the handler; and twelve clients that ask for the 2.7M-line page and never read. Goal: any stored round
 * renders in under 500 ms with under 64 MiB of extra memory (peak RSS over the process's RSS before the render).
 *   npx tsx bench/trajectory-page.ts [runs] [--hostile-only]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRunPagesHandler } from '../src/runs/http.js';
import { LocalObjectStore } from '../src/runs/localObjectStore.js';
import { renderRunPage } from '../src/runs/page/render.js';
import { TrajectoryStore } from '../src/runs/trajectoryStore.js';
import { makeRound } from '../test/runs/fixture.js';

const runs = Number(process.argv.slice(2).find((a) => /^[0-9]+$/.test(a)) ?? 50);
const TARGET_MS = 200;
const TARGET_BYTES = 2 * 1024 * 1024;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

function report(label: string, ms: number[], bytes: number): void {
  const p50 = percentile(ms, 50);
  const p95 = percentile(ms, 95);
  const ok = p95 < TARGET_MS && bytes < TARGET_BYTES ? 'within target' : 'OVER TARGET';
  console.log(
    `${label.padEnd(8)} p50 ${p50.toFixed(1).padStart(6)} ms  p95 ${p95.toFixed(1).padStart(6)} ms (target ${TARGET_MS})  ` +
      `page ${(bytes / 1024).toFixed(0)} KiB (target ${TARGET_BYTES / 1024} KiB)  ${ok}`,
  );
}

async function main(): Promise<void> {
  const round = makeRound({ round: 0, steps: 100, bytes: 1_000_000 });
  const jsonBytes = Buffer.byteLength(JSON.stringify(round.trajectory));
  console.log(
    `round: ${round.trajectory.steps.length} steps, trajectory JSON ${(jsonBytes / 1024).toFixed(0)} KiB; ${runs} runs each`,
  );

  const input = {
    round,
    rounds: [round.summary],
    roundHref: (n: number) => `/runs/octo/demo/12/${n}`,
    staticBase: '/runs/_static',
  };
  for (let i = 0; i < 5; i++) renderRunPage(input);
  const renderMs: number[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    bytes = Buffer.byteLength(renderRunPage(input));
    renderMs.push(performance.now() - started);
  }
  report('render', renderMs, bytes);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-bench-page-'));
  const store = new TrajectoryStore(new LocalObjectStore(dir));
  await store.putRound(round);
  const handler = createRunPagesHandler({ source: store });
  const server = http.createServer((req, res) => void (handler(req, res) || res.writeHead(404).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/runs/octo/demo/12/0`;
  const handlerMs: number[] = [];
  for (let i = 0; i < runs + 5; i++) {
    const started = performance.now();
    const res = await fetch(url);
    const body = await res.arrayBuffer();
    if (i >= 5) handlerMs.push(performance.now() - started);
    bytes = body.byteLength;
  }
  report('handler', handlerMs, bytes);
  server.close();
  await rm(dir, { recursive: true, force: true });
}

const HOSTILE_MS = 500;
const HOSTILE_MIB = 64;

function hostile(...args: string[]): Record<string, unknown> {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', 'bench/trajectory-page-hostile.ts', ...args],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
}

function fmt(n: unknown, digits = 0): string {
  return typeof n === 'number' ? n.toFixed(digits) : '—';
}

function hostileReport(): void {
  console.log(
    `\nhostile rounds (goal: < ${HOSTILE_MS} ms, < ${HOSTILE_MIB} MiB extra; median of 3 after a warm-up; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs)`,
  );
  for (const name of ['patch', 'deep', 'steps']) {
    for (const mode of ['render', 'handler']) {
      const r = hostile(name, mode);
      const ok =
        typeof r.ms === 'number' &&
        r.ms < HOSTILE_MS &&
        Number(r.peakRssMiB) < HOSTILE_MIB &&
        !r.error &&
        (r.status ?? 200) === 200;
      const what = r.error ? `error: ${String(r.error)}` : r.status ? `HTTP ${String(r.status)}` : '';
      console.log(
        `${name.padEnd(6)} ${mode.padEnd(8)} ${fmt(r.ms).padStart(6)} ms  page ${fmt(typeof r.bytes === 'number' ? r.bytes / 1024 / 1024 : undefined, 2).padStart(6)} MiB  ` +
          `peak RSS +${fmt(r.peakRssMiB).padStart(4)} MiB  ${what} ${ok ? 'within goal' : 'OVER GOAL'}`,
      );
    }
  }
  const c = hostile('clients');
  console.log(
    `clients  ${String(c.clients)} non-reading clients of the patch page: answered in ${fmt(c.answeredMs)} ms (${String(c.statuses)}); ` +
      `then held ${fmt(c.queuedMiB, 1)} MiB queued in responses, heap +${fmt(c.heldHeapMiB)} MiB, RSS +${fmt(c.heldRssMiB)} MiB (peak +${fmt(c.peakRssMiB)} MiB)`,
  );
}

(process.argv.includes('--hostile-only') ? Promise.resolve(hostileReport()) : main().then(hostileReport)).catch(
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
