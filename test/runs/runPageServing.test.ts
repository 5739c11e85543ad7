import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startViewServer } from '../../src/cli/viewServer.js';
import { createRunPagesHandler, type RunPagesGate } from '../../src/runs/http.js';
import { LocalObjectStore } from '../../src/runs/localObjectStore.js';
import { PAGE_LIMITS } from '../../src/runs/page/limits.js';
import { TrajectoryStore } from '../../src/runs/trajectoryStore.js';
import { hostileRound, makeRound } from './fixture.js';

/**
 * The run pages over real HTTP from a real trajectory store: the raw routes a clipped page links to, behind the
 * page's own check; the page streamed so a client that never reads holds a chunk, not the page, and is cut off;
 * requests in flight limited per client and in all (issue #31).
 */
const STALL_MS = 400;
/** A gate that lets through whoever names themselves in `x-user` (the real sign-in is test/runs/signIn.test.ts). */
const gate: RunPagesGate = {
  signOutPath: '/runs/_auth/logout',
  handle: async () => false,
  allow: async (req, res) => {
    const user = req.headers['x-user'];
    if (typeof user === 'string' && user) return { login: user };
    res.writeHead(404).end('no');
    return null;
  },
};

let dir: string;
let server: Server;
let base: string;
/** The server side of every response, to see what it holds for a reader. */
const responses: ServerResponse[] = [];
const big = makeRound({ steps: 5, bytes: 20_000, issueNumber: 7 });
// 12 MB of output in one step: more than loopback's socket buffers hold, so a reader that never reads stalls it.
big.trajectory.steps[2]!.observations[0]!.observation = 'z'.repeat(12_000_000);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'frognano-serving-'));
  const store = new TrajectoryStore(new LocalObjectStore(dir));
  await store.putRound(hostileRound('patch'));
  await store.putRound({ ...hostileRound('deep'), ref: { ...hostileRound('deep').ref, issueNumber: 8 } });
  await store.putRound(big);
  const handler = createRunPagesHandler({
    source: store,
    gate,
    send: { stallMs: STALL_MS },
    slots: { perClient: 2, global: 3 },
  });
  server = createServer((req, res) => {
    responses.push(res);
    if (!handler(req, res)) res.writeHead(418).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

/** A client that sends the request and never reads the answer. */
function nonReading(pathname: string, user: string): net.Socket {
  const { port } = new URL(base);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(`GET ${pathname} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nx-user: ${user}\r\n\r\n`);
  socket.pause();
  return socket;
}

async function until(what: () => boolean, ms = 10_000): Promise<void> {
  const started = Date.now();
  while (!what()) {
    if (Date.now() - started > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const get = (p: string, user = 'alice') => fetch(`${base}${p}`, { headers: user ? { 'x-user': user } : {} });

describe('raw routes', () => {
  it('serve a step, the round and the patch unclipped, behind the same check as the page', async () => {
    const step = await get('/runs/octo/demo/8/0/step/1.json');
    expect(step.status).toBe(200);
    expect(step.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(step.headers.get('content-security-policy')).toContain("default-src 'none'");
    const json = (await step.json()) as {
      page_step: number;
      assistant: { tool_calls: { function: { arguments: string } }[] };
    };
    expect(json.page_step).toBe(1);
    // The 6,000-deep arguments, exactly as the model wrote them.
    expect(json.assistant.tool_calls[0]!.function.arguments).toBe(
      hostileRound('deep').trajectory.steps[0]!.assistant.tool_calls![0]!.function.arguments,
    );
    const patch = await get('/runs/octo/demo/12/0/patch.diff');
    expect(patch.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await patch.text()).toBe(hostileRound('patch').patch);
    const round = (await (await get('/runs/octo/demo/7/0/round.json')).json()) as typeof big;
    expect(round.trajectory.steps[2]!.observations[0]!.observation).toHaveLength(12_000_000);
    // No user: the page and every raw route get the gate's answer; a step or round that is not there, 404.
    for (const p of ['/runs/octo/demo/8/0', '/runs/octo/demo/8/0/step/1.json', '/runs/octo/demo/8/0/round.json'])
      expect(await (await get(p, '')).text()).toBe('no');
    for (const p of [
      '/runs/octo/demo/8/0/step/11.json',
      '/runs/octo/demo/8/1/round.json',
      '/runs/octo/demo/8/0/step/0.json',
    ])
      expect((await get(p)).status).toBe(404);
  });

  it('are where the clipped page links', async () => {
    const html = await (await get('/runs/octo/demo/12')).text();
    expect(Buffer.byteLength(html)).toBeLessThan(PAGE_LIMITS.pageBytes);
    const links = [...html.matchAll(/href="(\/runs\/octo\/demo\/12\/0\/[^"#]+)"/g)].map((m) => m[1]!);
    expect(links).toContain('/runs/octo/demo/12/0/patch.diff');
    for (const link of new Set(links)) expect((await get(link)).status).toBe(200);
  });
});

describe('streaming', () => {
  it('holds a chunk, not the page, for a client that never reads', async () => {
    const before = responses.length;
    const socket = nonReading('/runs/octo/demo/12/0', 'bob');
    try {
      await until(() => responses.length > before && responses[before]!.headersSent);
      await new Promise((r) => setTimeout(r, 300));
      // The page of 2.7M patch lines was 70 MB in one string, all of it queued in the response.
      expect(responses[before]!.writableLength).toBeLessThan(256 * 1024);
    } finally {
      socket.destroy();
    }
  });

  it(`cuts off a reader that takes nothing for ${STALL_MS} ms`, async () => {
    const before = responses.length;
    const socket = nonReading('/runs/octo/demo/7/0/round.json', 'carol');
    try {
      await until(() => responses.length > before && responses[before]!.headersSent);
      const res = responses[before]!;
      expect(res.statusCode).toBe(200);
      await until(() => res.destroyed, STALL_MS + 5000);
      expect(res.writableFinished).toBe(false);
    } finally {
      socket.destroy();
    }
  });
});

describe('requests in flight', () => {
  it('allows 2 per client (429 past it) and 3 in all here (503), with Retry-After, and frees them when done', async () => {
    const held = [
      nonReading('/runs/octo/demo/7/0/round.json', 'dave'),
      nonReading('/runs/octo/demo/7/0/round.json', 'dave'),
    ];
    const before = responses.length;
    try {
      await until(() => responses.slice(before).filter((r) => r.headersSent).length >= 2);
      const third = await get('/runs/octo/demo/8/0', 'dave');
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('5');
      held.push(nonReading('/runs/octo/demo/7/0/round.json', 'erin'));
      await until(() => responses.slice(before).filter((r) => r.headersSent && r.statusCode === 200).length >= 3);
      const full = await get('/runs/octo/demo/8/0', 'frank');
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('5');
    } finally {
      for (const s of held) s.destroy();
    }
    // Gone readers free their slots.
    await until(() => responses.slice(before).every((r) => r.destroyed || r.writableFinished));
    expect((await get('/runs/octo/demo/8/0', 'dave')).status).toBe(200);
  });
});

describe('frognano view', () => {
  it('serves the bounded page and the raw step of a hostile trajectory', async () => {
    const view = await startViewServer(hostileRound('deep').trajectory);
    try {
      const res = await fetch(view.url);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('&quot;[…]&quot;');
      const raw = /href="([^"]+\/step\/1\.json)"/.exec(html)![1]!;
      const step = await fetch(new URL(raw, view.url));
      expect(step.status).toBe(200);
      expect(((await step.json()) as { page_step: number }).page_step).toBe(1);
    } finally {
      await view.close();
    }
  });
});
