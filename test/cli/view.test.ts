import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { viewCommand } from '../../src/cli/commands/view.js';
import { runCli } from '../../src/cli/main.js';
import { startViewServer } from '../../src/cli/viewServer.js';
import { makeTrajectory } from '../runs/fixture.js';
import { waitFor } from '../support/waitFor.js';

function io(cwd: string) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => (out += c));
  return { io: { stdout, stderr, env: {}, cwd }, text: () => out };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-view-'));
  const t = makeTrajectory(6, 20_000);
  t.output_patch = 'diff --git a/x b/x\n+added\n';
  await writeFile(path.join(dir, 'trajectory.json'), JSON.stringify(t));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('frognano view', () => {
  it('serves the run page of a trajectory file on 127.0.0.1 until stopped', async () => {
    const { io: cliIo, text } = io(dir);
    const stop = new AbortController();
    const done = viewCommand(['trajectory.json'], cliIo, stop.signal);
    const url = await waitFor('the run page address on the output', () => /http:\/\/\S+/.exec(text())?.[0], 5000);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/runs\/octo\/demo\/12$/);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html.match(/<li class="step"/g)).toHaveLength(6);
    expect(html).toContain('<span class="add">+added</span>');
    expect(html).not.toContain('sign out');
    const root = await fetch(new URL('/', url), { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/runs/octo/demo/12');
    stop.abort();
    expect(await done).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('is listed in the help and says what it needs', async () => {
    const { io: cliIo, text } = io(dir);
    expect(await runCli(['view'], cliIo)).toBe(2);
    expect(text()).toContain('view needs the trajectory.json to show.');
    const help = io(dir);
    expect(await runCli(['view', '--help'], help.io)).toBe(0);
    expect(help.text()).toContain('on 127.0.0.1 only, with no sign-in');
    const missing = io(dir);
    expect(await runCli(['view', 'nope.json'], missing.io)).toBe(3);
  });

  it('answers only a loopback Host on its own port (a DNS-rebound name gets 421)', async () => {
    const t = JSON.parse(await readFile(path.join(dir, 'trajectory.json'), 'utf8'));
    const server = await startViewServer(t);
    try {
      const { port, pathname } = new URL(server.url);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`])
        expect(await statusFor(server.url, host)).toBe(200);
      for (const host of [
        `evil.test:${port}`,
        `127.0.0.1.nip.io:${port}`,
        'localhost',
        `localhost:${Number(port) + 1}`,
      ])
        expect(await statusFor(server.url, host)).toBe(421);
      expect(pathname).toBe('/runs/octo/demo/12');
    } finally {
      await server.close();
    }
  });
});

/** The status of a GET sent with exactly this Host header, as a rebound browser page would send it. */
function statusFor(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    })
      .on('error', reject)
      .end();
  });
}
