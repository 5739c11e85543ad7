/**
 * One hostile round's page cost, measured in this process alone (bench/trajectory-page.ts starts one per case, so
 * each peak is its own: `maxRSS` only ever grows). Prints one JSON line.
 *   node --expose-gc --import tsx bench/trajectory-page-hostile.ts <patch|deep|steps> <render|handler>
 *   node --expose-gc --import tsx bench/trajectory-page-hostile.ts clients
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRunPagesHandler } from '../src/runs/http.js';
import { LocalObjectStore } from '../src/runs/localObjectStore.js';
import { renderRunPage } from '../src/runs/page/render.js';
import type { StoredRound } from '../src/runs/record.js';
import { TrajectoryStore } from '../src/runs/trajectoryStore.js';
import { hostileRound, makeRound } from '../test/runs/fixture.js';

const MiB = 1024 * 1024;
const CLIENTS = 12;

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const rssMiB = () => process.memoryUsage().rss / MiB;
const maxRssMiB = () => process.resourceUsage().maxRSS / 1024;

async function serve(
  round: StoredRound,
  responses: http.ServerResponse[] = [],
): Promise<{ url: string; close(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-bench-hostile-'));
  const store = new TrajectoryStore(new LocalObjectStore(dir));
  await store.putRound(round);
  await store.putRound(makeRound({ steps: 20, bytes: 100_000, issueNumber: 99 })); // the warm-up's
  const handler = createRunPagesHandler({ source: store });
  const server = http.createServer((req, res) => {
    responses.push(res);
    if (!handler(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { ref } = round;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/runs/${ref.owner}/${ref.repo}/${ref.issueNumber}/${ref.round}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

const RUNS = 3;

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

/** renderRunPage to one string: a warm-up on an ordinary round, then the median of RUNS renders of this one. */
async function measureRender(round: StoredRound): Promise<object> {
  const input = (r: StoredRound) => ({
    round: r,
    rounds: [r.summary],
    roundHref: (n: number) => `/runs/o/r/1/${n}`,
    staticBase: '/s',
  });
  renderRunPage(input(makeRound({ steps: 20, bytes: 100_000 })));
  gc();
  const rss0 = rssMiB();
  const ms: number[] = [];
  let bytes = 0;
  try {
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      bytes = Buffer.byteLength(renderRunPage(input(round)));
      ms.push(performance.now() - started);
    }
    return { ms: median(ms), bytes, peakRssMiB: maxRssMiB() - rss0 };
  } catch (err) {
    return { error: (err as Error).message, peakRssMiB: maxRssMiB() - rss0 };
  }
}

/** GET over loopback from a local store (read, validate, render, send): one warm-up request, then the median of RUNS. */
async function measureHandler(round: StoredRound): Promise<object> {
  const server = await serve(round);
  const warm = server.url.replace(/\/[0-9]+\/[0-9]+$/, '/99/0');
  await (await fetch(warm)).arrayBuffer();
  gc();
  const rss0 = rssMiB();
  const ms: number[] = [];
  let status = 0;
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const res = await fetch(server.url);
    bytes = (await res.arrayBuffer()).byteLength;
    ms.push(performance.now() - started);
    status = res.status;
  }
  await server.close();
  return { ms: median(ms), status, bytes, peakRssMiB: maxRssMiB() - rss0 };
}

/**
 * Twelve clients ask for the 2.7M-line page and never read. Waits until the server has answered (or refused, or cut)
 * every one, up to two minutes, then says what it still holds: bytes queued in its responses, heap and RSS.
 */
async function measureClients(): Promise<object> {
  const responses: http.ServerResponse[] = [];
  const server = await serve(hostileRound('patch'), responses);
  const { hostname, port, pathname } = new URL(server.url);
  gc();
  const rss0 = rssMiB();
  const heap0 = process.memoryUsage().heapUsed / MiB;
  const started = performance.now();
  const sockets = Array.from({ length: CLIENTS }, () => {
    const s = net.connect(Number(port), hostname);
    s.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
    s.pause();
    return s;
  });
  const settled = () => responses.filter((r) => r.headersSent || r.destroyed).length;
  while ((responses.length < CLIENTS || settled() < CLIENTS) && performance.now() - started < 120_000)
    await new Promise((r) => setTimeout(r, 250));
  const answeredMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 1000));
  const queued = responses.reduce((n, r) => n + (r.destroyed ? 0 : r.writableLength), 0);
  const statuses = responses.map((r) => r.statusCode);
  gc();
  const held = { rssMiB: rssMiB() - rss0, heapMiB: process.memoryUsage().heapUsed / MiB - heap0 };
  for (const s of sockets) s.destroy();
  await server.close();
  return {
    clients: CLIENTS,
    answeredMs,
    statuses: [...new Set(statuses)].map((c) => `${statuses.filter((x) => x === c).length}×${c}`).join(' '),
    queuedMiB: queued / MiB,
    heldRssMiB: held.rssMiB,
    heldHeapMiB: held.heapMiB,
    peakRssMiB: maxRssMiB() - rss0,
  };
}

async function main(): Promise<void> {
  const [name, mode] = process.argv.slice(2);
  const out =
    name === 'clients'
      ? await measureClients()
      : mode === 'handler'
        ? await measureHandler(hostileRound(name as 'patch' | 'deep' | 'steps'))
        : await measureRender(hostileRound(name as 'patch' | 'deep' | 'steps'));
  console.log(JSON.stringify({ case: name, mode: mode ?? 'http', ...out }));
}

if (process.argv[1]?.endsWith('trajectory-page-hostile.ts')) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
