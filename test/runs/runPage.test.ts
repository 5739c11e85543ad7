import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collaboratorPermissionLookup } from '../../src/app/runPages/permission.js';
import { createRunPagesHandler, type RoundSource, type RunPagesGate } from '../../src/runs/http.js';
import { lineDiff } from '../../src/runs/page/diff.js';
import { renderRunPage } from '../../src/runs/page/render.js';
import type { StoredRound } from '../../src/runs/record.js';
import { makeRound } from './fixture.js';

const round0 = makeRound({ round: 0 });
const source: RoundSource = {
  listRounds: async (ref) => (ref.owner === 'octo' && ref.issueNumber === 12 ? [round0.summary] : []),
  getRound: async (ref) => (ref.owner === 'octo' && ref.issueNumber === 12 && ref.round === 0 ? round0 : null),
};

function page(r: StoredRound = round0): string {
  return renderRunPage({
    round: r,
    rounds: [r.summary],
    roundHref: (n) => `/runs/octo/demo/12/${n}`,
    staticBase: '/runs/_static',
  });
}

describe('renderRunPage', () => {
  it('escapes every text the model, the tools and the issue wrote', () => {
    const html = page();
    expect(html).not.toMatch(/<script>alert|<img src=x|<b>now<\/b>/);
    expect(html).toContain('&lt;script&gt;alert(0)&lt;/script&gt;');
    expect(html).toContain('Fix the parser &lt;b&gt;now&lt;/b&gt;');
    // The only script is the page's own file; no inline handlers or styles.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/<[^>]*\s(on[a-z]+|style)=/);
  });

  it('renders reasoning collapsed, long outputs folded, per-step time and tokens, the final patch and the tests', () => {
    const html = page();
    expect(html).toContain('<details class="reasoning"><summary>Reasoning</summary>');
    expect(html).toMatch(/<details class="fold"><summary>Output · 121 lines/);
    expect(html).toContain('model 800 ms · tools 120 ms · 1,000 in · 50 out tokens');
    expect(html).toContain('<span class="add">+const a = 2;</span>');
    expect(html).toContain('<span class="verdict fail">failed (exit 1)</span>');
    expect(html).toContain('<a class="round" data-round="0" href="/runs/octo/demo/12/0" aria-current="page">');
  });

  // Its render time is bench/trajectory-page.ts's figure, not a timed assertion (a loaded machine would flake it).
  it('renders a 100-step, 1 MB round, and the page weighs under 2 MB', () => {
    const html = page();
    expect(Buffer.byteLength(html)).toBeLessThan(2 * 1024 * 1024);
  });

  it('diffs an edit by lines', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
    ]);
    const big = Array.from({ length: 1000 }, (_, i) => `l${i}`).join('\n');
    expect(lineDiff(big, `${big}\nmore`).filter((l) => l.op !== ' ')).toHaveLength(1000 + 1001);
  });
});

describe('run pages handler', () => {
  let server: Server;
  let base: string;
  const gate: RunPagesGate = {
    signOutPath: '/runs/_auth/logout',
    handle: async () => false,
    allow: async (req, res) => {
      if (req.headers['x-user'] === 'alice') return { login: 'alice' };
      res.writeHead(404).end('no');
      return null;
    },
  };
  beforeAll(async () => {
    const open = createRunPagesHandler({ source });
    const gated = createRunPagesHandler({ source, gate });
    server = createServer((req, res) => {
      const handler = req.url?.startsWith('/gated') ? gated : open;
      if (req.url?.startsWith('/gated')) req.url = req.url.slice('/gated'.length);
      if (!handler(req, res)) res.writeHead(418).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('serves the page with a strict CSP and no caching, its static files, and 404 for the rest', async () => {
    const res = await fetch(`${base}/runs/octo/demo/12`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(res.headers.get('cache-control')).toBe('private, no-store');
    expect(await res.text()).toContain('Step 100');
    expect((await fetch(`${base}/runs/_static/page.js`)).headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${base}/runs/_static/page.css`)).status).toBe(200);
    expect(await (await fetch(`${base}/runs/`)).text()).toContain('Open a run from the link');
    for (const p of ['/runs/octo/demo/13', '/runs/octo/demo/12/5', '/runs/..%2F/demo/12', '/runs/x'])
      expect((await fetch(`${base}${p}`)).status).toBe(404);
    // A raw request (fetch would resolve the dots itself): the handler resolves them too, so this path is not its own.
    const dots = await new Promise<number>((resolve, reject) => {
      request(`${base}/x`, { path: '/runs/../demo/12' }, (r) => (r.resume(), resolve(r.statusCode!)))
        .on('error', reject)
        .end();
    });
    expect(dots).toBe(418);
    expect((await fetch(`${base}/runs/octo/demo/12`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${base}/other`)).status).toBe(418);
  });

  it('asks the gate before reading anything', async () => {
    expect((await fetch(`${base}/gated/runs/octo/demo/12`)).status).toBe(404);
    const ok = await fetch(`${base}/gated/runs/octo/demo/12`, { headers: { 'x-user': 'alice' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('sign out');
  });
});

describe('collaboratorPermissionLookup', () => {
  it('allows read roles, refuses none/404/no installation, and keeps answers a minute', async () => {
    let now = 0;
    const asks: string[] = [];
    const roles: Record<string, string> = { alice: 'read', tri: 'triage', bob: 'none' };
    const lookup = collaboratorPermissionLookup(
      async (repo) =>
        repo.repo === 'gone'
          ? null
          : {
              request: async (_route: string, p?: Record<string, unknown>) => {
                asks.push(String(p?.username));
                const role = roles[String(p?.username)];
                if (!role) throw Object.assign(new Error('Not Found'), { status: 404 });
                return { data: { role_name: role } };
              },
            },
      () => now,
    );
    const repo = { owner: 'o', repo: 'r' };
    expect(await lookup(repo, 'alice')).toBe(true);
    expect(await lookup(repo, 'tri')).toBe(true);
    expect(await lookup(repo, 'bob')).toBe(false);
    expect(await lookup(repo, 'nobody')).toBe(false);
    expect(await lookup({ owner: 'o', repo: 'gone' }, 'alice')).toBe(false);
    expect(await lookup(repo, 'alice')).toBe(true);
    expect(asks.filter((a) => a === 'alice')).toHaveLength(1);
    now = 61_000;
    await lookup(repo, 'alice');
    expect(asks.filter((a) => a === 'alice')).toHaveLength(2);
  });
});
