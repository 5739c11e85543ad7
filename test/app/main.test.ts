import { afterEach, describe, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createQueue, enqueueJob } from '../../src/queue/queue.js';

/** The real `npm start` entry, run as a child process: setup mode without credentials, the full app with them. */
const ROOT = process.cwd();
let child: ChildProcess | undefined;
let tmp: string | undefined;

afterEach(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  child = undefined;
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `env` values of undefined remove the variable; `cwd` is where the app looks for `.env` (and app.yml). */
async function start(env: Record<string, string | undefined>, cwd = ROOT): Promise<{ base: string; output: () => string }> {
  const port = await freePort();
  const clean = { ...process.env };
  for (const k of ['APP_ID', 'PRIVATE_KEY', 'PRIVATE_KEY_PATH', 'WEBHOOK_SECRET', 'WEBHOOK_PROXY_URL', 'NODE_ENV']) delete clean[k];
  // NO_SMEE_SETUP: the setup page would otherwise try to reach smee.io for a webhook proxy.
  const childEnv: Record<string, string | undefined> = { ...clean, HOST: '127.0.0.1', PORT: String(port), NO_SMEE_SETUP: 'true', LOG_LEVEL: 'info', ...env };
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
  let out = '';
  child = spawn(join(ROOT, 'node_modules/.bin/tsx'), [join(ROOT, 'src/app/main.ts')], {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const base = `http://127.0.0.1:${port}`;
  // Up when it answers HTTP (not when it logs so: a quieter LOG_LEVEL hides "Listening on").
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`app did not start:\n${out}`);
    if (await fetch(`${base}/`, { redirect: 'manual' }).then(() => true, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, output: () => out };
}

describe('npm start (src/app/main.ts)', () => {
  test('without credentials it serves Probot\'s setup page with the app.yml manifest', async () => {
    const { base } = await start({});
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/probot');
    const page = await fetch(`${base}/probot`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const manifest = JSON.parse(/name="manifest" id="manifest" value='([^']+)'/.exec(html)![1]!);
    expect(manifest).toMatchObject({
      name: 'frognano-bot',
      default_events: ['issues', 'issue_comment', 'pull_request_review'],
      default_permissions: { issues: 'write', pull_requests: 'write', contents: 'write', checks: 'write', metadata: 'read' },
      redirect_url: `${base}/probot/setup`,
    });
  }, 60_000);

  test('with credentials it serves webhooks (signature checked) and the ops routes', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'fn-main-'));
    const keyPath = join(tmp, 'app.pem');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(keyPath, privateKey.export({ type: 'pkcs1', format: 'pem' }));
    const { base, output } = await start({ APP_ID: '12345', PRIVATE_KEY_PATH: keyPath, WEBHOOK_SECRET: 'main-test-secret' });

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: [expect.objectContaining({ name: 'redis', ok: true })] });
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('frognano_');

    // A webhook the app ignores (another label), correctly signed: accepted.
    const body = JSON.stringify({ action: 'labeled', label: { name: 'bug' } });
    const post = (signature: string) =>
      fetch(`${base}/api/github/webhooks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': 'main-test-1', 'x-hub-signature-256': signature },
        body,
      });
    const good = `sha256=${createHmac('sha256', 'main-test-secret').update(body).digest('hex')}`;
    expect((await post(good)).status).toBe(200);
    expect((await post('sha256=' + '0'.repeat(64))).status).toBe(400);
    expect(output()).toContain('frognano: triggering on label');
  }, 60_000);

  test('LOG_LEVEL in .env sets the level of every line, the first ones included', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'fn-main-env-'));
    writeFileSync(join(tmp, '.env'), '# only warnings and errors\nLOG_LEVEL=warn\n');
    const { base, output } = await start({ LOG_LEVEL: undefined }, tmp);
    expect((await fetch(`${base}/probot`)).status).toBe(200); // an info line per request at level info
    await new Promise((r) => setTimeout(r, 300));
    expect(output()).not.toContain('Listening on');
    expect(output()).not.toContain('"level":30');
  }, 60_000);

  test('a LOG_LEVEL in the environment wins over the one in .env', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'fn-main-env-'));
    writeFileSync(join(tmp, '.env'), 'LOG_LEVEL=warn\n');
    const { base, output } = await start({ LOG_LEVEL: 'info' }, tmp);
    expect((await fetch(`${base}/probot`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(output()).toContain('Listening on');
    expect(output()).toMatch(/"level":30,.*"url":"\/probot"/);
  }, 60_000);

  test('FROGNANO_QUEUE_PREFIX: the app serves the queue under that prefix (the one runners read)', async () => {
    const prefix = `fn-test-main-${randomUUID().slice(0, 8)}`;
    const conn = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    const queue = createQueue(conn, { prefix });
    try {
      for (const issueNumber of [1, 2, 3]) {
        await enqueueJob(queue, {
          installationId: 1, owner: 'o', repo: 'r', issueNumber, title: 't', body: '', defaultBranch: 'main',
          triggeredBy: { login: 'u' }, attempt: 1, trigger: 'label', enqueuedAt: new Date().toISOString(),
        });
      }
      tmp = mkdtempSync(join(tmpdir(), 'fn-main-'));
      const keyPath = join(tmp, 'app.pem');
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      writeFileSync(keyPath, privateKey.export({ type: 'pkcs1', format: 'pem' }));
      const { base, output } = await start({ APP_ID: '12345', PRIVATE_KEY_PATH: keyPath, WEBHOOK_SECRET: 's', FROGNANO_QUEUE_PREFIX: prefix });
      expect(output()).toContain(`(key prefix ${prefix})`);
      // The gauges read the app's queue on each scrape: the three jobs queued under the prefix.
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^frognano_jobs_queued 3$/m);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await conn.quit();
    }
  }, 60_000);
});
