import { afterEach, describe, expect, test } from '@jest/globals';
import { waitFor } from '../support/waitFor.js';
import { issueJob } from '../support/tenantJobs.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { copyFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createQueue, enqueueJob } from '../../src/queue/queue.js';
import { kill9, startRedis, stopAll } from '../support/redisServers.js';

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
function spawnApp(env: Record<string, string | undefined>, port: number, cwd = ROOT): () => string {
  const clean = { ...process.env };
  for (const k of ['APP_ID', 'PRIVATE_KEY', 'PRIVATE_KEY_PATH', 'WEBHOOK_SECRET', 'WEBHOOK_PROXY_URL', 'NODE_ENV'])
    delete clean[k];
  // NO_SMEE_SETUP: the setup page would otherwise try to reach smee.io for a webhook proxy.
  const childEnv: Record<string, string | undefined> = {
    ...clean,
    HOST: '127.0.0.1',
    PORT: String(port),
    NO_SMEE_SETUP: 'true',
    LOG_LEVEL: 'info',
    ...env,
  };
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
  let out = '';
  child = spawn(join(ROOT, 'node_modules/.bin/tsx'), [join(ROOT, 'src/app/main.ts')], {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return () => out;
}

async function start(
  env: Record<string, string | undefined>,
  cwd = ROOT,
): Promise<{ base: string; output: () => string }> {
  const port = await freePort();
  const output = spawnApp(env, port, cwd);
  const base = `http://127.0.0.1:${port}`;
  // Up when it answers HTTP (not when it logs so: a quieter LOG_LEVEL hides "Listening on").
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (child!.exitCode !== null || Date.now() > deadline) throw new Error(`app did not start:\n${output()}`);
    if (
      await fetch(`${base}/`, { redirect: 'manual' }).then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, output };
}

/** An app that must refuse to start: its exit code and everything it wrote, within 45 s. */
async function refusal(env: Record<string, string | undefined>): Promise<{ code: number | null; output: string }> {
  const output = spawnApp(env, await freePort());
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((r) => child!.once('exit', (c) => r(c))),
    new Promise<'running'>((r) => (timer = setTimeout(() => r('running'), 45_000))),
  ]);
  clearTimeout(timer);
  if (code === 'running') throw new Error(`app did not refuse to start:\n${output()}`);
  return { code, output: output() };
}

/** A fresh GitHub App private key in a temp dir (removed after the test), as PRIVATE_KEY_PATH takes it. */
function appKeyFile(): string {
  tmp = mkdtempSync(join(tmpdir(), 'fn-main-'));
  const keyPath = join(tmp, 'app.pem');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(keyPath, privateKey.export({ type: 'pkcs1', format: 'pem' }));
  return keyPath;
}

/** /readyz once it says ready (Redis connects after the server listens), within 20 s; the last answer otherwise. */
async function readyz(base: string): Promise<Response> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await fetch(`${base}/readyz`);
    if (r.status === 200 || Date.now() > deadline) return r;
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** Resident memory of the app process, from its own /metrics. */
async function residentBytes(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^process_resident_memory_bytes (\d+)/m.exec(text)![1]);
}

/**
 * Streams `totalBytes` of JSON-ish filler in 1 MiB chunks, with or without a Content-Length that says so,
 * and resolves with the status as soon as the server answers (it should answer long before the end).
 */
function streamPost(
  base: string,
  totalBytes: number,
  declareLength: boolean,
): Promise<{ status: number; sentBytes: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': 'sha256=' + '0'.repeat(64),
    };
    if (declareLength) headers['content-length'] = String(totalBytes);
    const req = request(`${base}/api/github/webhooks`, { method: 'POST', headers });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      res.resume();
      resolve({ status: res.statusCode!, sentBytes: sent });
    });
    // The server drops the connection after answering; a write error after the answer is expected.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    const pump = () => {
      while (!answered && sent < totalBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe('npm start (src/app/main.ts)', () => {
  test("without credentials it serves Probot's setup page with the app.yml manifest", async () => {
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
      default_events: [
        'issues',
        'issue_comment',
        'pull_request_review',
        'check_suite',
        'check_run',
        'workflow_run',
        'status',
      ],
      default_permissions: {
        issues: 'write',
        pull_requests: 'write',
        contents: 'write',
        checks: 'write',
        metadata: 'read',
        actions: 'read',
        statuses: 'read',
      },
      redirect_url: `${base}/probot/setup`,
    });
  }, 60_000);

  test('with credentials it serves webhooks (signature checked) and the ops routes', async () => {
    const keyPath = appKeyFile();
    const { base, output } = await start({
      APP_ID: '12345',
      PRIVATE_KEY_PATH: keyPath,
      WEBHOOK_SECRET: 'main-test-secret',
    });

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await readyz(base);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ready',
      checks: [expect.objectContaining({ name: 'redis', ok: true })],
    });
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('frognano_');
    // A normal start logs no stack (before the bad signature below, which Probot logs with one).
    expect(output()).not.toMatch(/"stack"|Stream isn't writeable/);

    // A webhook the app ignores (another label), correctly signed: accepted.
    const body = JSON.stringify({ action: 'labeled', label: { name: 'bug' } });
    const post = (signature: string) =>
      fetch(`${base}/api/github/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': 'main-test-1',
          'x-hub-signature-256': signature,
        },
        body,
      });
    const good = `sha256=${createHmac('sha256', 'main-test-secret').update(body).digest('hex')}`;
    expect((await post(good)).status).toBe(200);
    expect((await post('sha256=' + '0'.repeat(64))).status).toBe(400);
    expect(output()).toContain('frognano: triggering on label');
    // A normal start logs no stack (the fair share waits for its connection instead of failing on it).
    expect(output()).not.toContain('fair-share dispatch failed');
  }, 60_000);

  test("Redis down: one JSON line per change of state from every client (Probot's too), /readyz names the cause", async () => {
    const keyPath = appKeyFile();
    const port = await freePort(); // nothing listens here until the test starts a Redis on it
    const { base, output } = await start({
      APP_ID: '12345',
      PRIVATE_KEY_PATH: keyPath,
      WEBHOOK_SECRET: 'main-test-secret',
      REDIS_URL: `redis://127.0.0.1:${port}`,
    });
    const clients = ['probot', 'probot-subscriber', 'queue', 'state', 'events', 'ci-judge'];
    const lines = () => output().split('\n').filter(Boolean);
    const states = (state: string) =>
      lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { redis?: string; state?: string })
        .filter((l) => l.state === state)
        .map((l) => l.redis)
        .sort();
    await waitFor(
      'every Redis client to log that it is retrying',
      () => states('retrying').length >= clients.length,
      20_000,
    );
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: { error: string }[] }).checks[0]!.error).toBe(
      'Redis unreachable: connection refused',
    );
    await new Promise((r) => setTimeout(r, 3000)); // many reconnects later: still one line each
    expect(lines().filter((l) => !l.startsWith('{'))).toEqual([]);
    expect(states('down')).toEqual([...clients].sort());
    expect(states('retrying')).toEqual([...clients].sort());

    const redis = await startRedis('', port);
    try {
      expect((await readyz(base)).status).toBe(200);
      await waitFor(
        'every Redis client to log that it is up again',
        () => states('up').length >= clients.length,
        20_000,
      );
      expect(states('up')).toEqual([...clients].sort());
      expect(states('down')).toHaveLength(clients.length);
      expect(output()).not.toMatch(/\[ioredis\]|"stack"/);
    } finally {
      await kill9(redis);
    }
  }, 90_000);

  test.each(['went away while it ran', 'was down from the start'])(
    'SIGTERM ends the app within 10 s when Redis %s',
    async (how) => {
      const keyPath = appKeyFile();
      const redis = await startRedis();
      if (how !== 'went away while it ran') await kill9(redis);
      try {
        const { base, output } = await start({
          APP_ID: '12345',
          PRIVATE_KEY_PATH: keyPath,
          WEBHOOK_SECRET: 'main-test-secret',
          REDIS_URL: `redis://127.0.0.1:${redis.port}`,
        });
        if (how === 'went away while it ran') {
          expect((await readyz(base)).status).toBe(200);
          await kill9(redis);
        }
        const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
        const started = Date.now();
        child!.kill('SIGTERM');
        const code = await Promise.race([
          exited,
          new Promise<'running'>((r) => setTimeout(() => r('running'), 10_000)),
        ]);
        expect({ code, output: code === 'running' ? output() : '' }).toEqual({ code: expect.any(Number), output: '' });
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        await stopAll();
      }
    },
    90_000,
  );

  test('a webhook body over 25 MB is answered 413 without being buffered, declared or streamed', async () => {
    const keyPath = appKeyFile();
    const { base } = await start({ APP_ID: '12345', PRIVATE_KEY_PATH: keyPath, WEBHOOK_SECRET: 'main-test-secret' });
    const before = await residentBytes(base);

    // Content-Length says 60 MB: refused before a byte of the body is read.
    const declared = await streamPost(base, 60 * 1024 * 1024, true);
    expect(declared.status).toBe(413);
    // No length given (chunked): read up to the cap, then refused; the rest is never read.
    const chunked = await streamPost(base, 60 * 1024 * 1024, false);
    expect(chunked.status).toBe(413);
    expect(chunked.sentBytes).toBeLessThan(60 * 1024 * 1024);
    const after = await residentBytes(base);
    // Without the cap a 60 MB body grew the process by ~600 MB; with it, at most the 25 MB cap and change.
    expect(after - before).toBeLessThan(80 * 1024 * 1024);

    // A normal delivery still goes through afterwards.
    const body = JSON.stringify({ action: 'labeled', label: { name: 'bug' } });
    const res = await fetch(`${base}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': 'main-test-2',
        'x-hub-signature-256': `sha256=${createHmac('sha256', 'main-test-secret').update(body).digest('hex')}`,
      },
      body,
    });
    expect(res.status).toBe(200);
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
        await enqueueJob(queue, issueJob('o', 'r', issueNumber));
      }
      const keyPath = appKeyFile();
      const { base, output } = await start({
        APP_ID: '12345',
        PRIVATE_KEY_PATH: keyPath,
        WEBHOOK_SECRET: 's',
        FROGNANO_QUEUE_PREFIX: prefix,
      });
      expect(output()).toContain(`(key prefix ${prefix})`);
      // The gauges read the app's queue on each scrape: the three jobs queued under the prefix.
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^frognano_jobs_queued 3$/m);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
      await conn.quit();
    }
  }, 60_000);

  test('the environment wins over .env for every setting, not only LOG_LEVEL (Probot copies .env over it)', async () => {
    const keyPath = appKeyFile();
    writeFileSync(join(tmp!, '.env'), 'FROGNANO_LABEL=from-file\nLOG_LEVEL=warn\n');
    const { output } = await start(
      {
        APP_ID: '12345',
        PRIVATE_KEY_PATH: keyPath,
        WEBHOOK_SECRET: 's',
        FROGNANO_LABEL: 'from-env',
        LOG_LEVEL: 'info',
      },
      tmp,
    );
    await waitFor('the app to log its trigger label', () => output().includes('triggering on label'), 20_000);
    // A JSON line: the quotes around the label are escaped.
    expect(output()).toContain('frognano: triggering on label \\"from-env\\"');
  }, 60_000);

  test.each([
    ['FROGNANO_FAIR_SHARE', 'maybe', 'FROGNANO_FAIR_SHARE=maybe is not accepted: expected on, off'],
    ['REDIS_SENTINEL_NAME', 'mymaster', 'invalid Redis settings: REDIS_SENTINEL_NAME is set without REDIS_SENTINELS'],
    [
      'FROGNANO_QUOTAS_FILE',
      '/nonexistent/quotas.yaml',
      'FROGNANO_QUOTAS_FILE=/nonexistent/quotas.yaml is not accepted: expected the path of an existing YAML quotas ' +
        'file; unset it for no quotas (docs/operating-at-scale.md#quotas)',
    ],
  ])(
    '%s=%s stops the start-up with exit code 2 and one line naming it',
    async (name, value, line) => {
      const keyPath = appKeyFile();
      const { code, output } = await refusal({
        APP_ID: '12345',
        PRIVATE_KEY_PATH: keyPath,
        WEBHOOK_SECRET: 's',
        [name]: value,
      });
      expect({ code, output }).toEqual({ code: 2, output: `frognano app: ${line}\n` });
    },
    60_000,
  );

  test('a PRIVATE_KEY_PATH that does not exist says what to do, in one line', async () => {
    const { code, output } = await refusal({ APP_ID: '12345', PRIVATE_KEY_PATH: '/nonexistent/app.pem' });
    expect(code).toBe(2);
    expect(output).toMatch(
      /^frognano app: PRIVATE_KEY_PATH=\/nonexistent\/app\.pem is not accepted: .*register the App/,
    );
    expect(output.trim().split('\n')).toHaveLength(1);
  }, 60_000);

  test('cp deploy/env.example .env && npm start: the setup page, without a stack trace', async () => {
    tmp = mkdtempSync(join(tmpdir(), 'fn-main-'));
    copyFileSync(join(ROOT, 'deploy/env.example'), join(tmp, '.env'));
    copyFileSync(join(ROOT, 'app.yml'), join(tmp, 'app.yml'));
    const { base, output } = await start({ LOG_LEVEL: undefined }, tmp);
    expect((await fetch(`${base}/probot`)).status).toBe(200);
    expect(output()).not.toMatch(/\n\s+at |Error|ENOENT/);
  }, 60_000);

  test('a weak FROGNANO_SESSION_SECRET stops the start-up with one line that says what to use, and no stack', async () => {
    const keyPath = appKeyFile();
    const { code, output } = await refusal({
      APP_ID: '12345',
      PRIVATE_KEY_PATH: keyPath,
      WEBHOOK_SECRET: 'main-test-secret',
      GITHUB_CLIENT_ID: 'Iv1.abc',
      GITHUB_CLIENT_SECRET: randomBytes(20).toString('hex'),
      FROGNANO_PUBLIC_URL: 'https://bot.example.org',
      FROGNANO_SESSION_SECRET: 'dragon',
    });
    expect({ code, output }).toEqual({
      code: 2,
      output:
        'frognano app: FROGNANO_SESSION_SECRET is too weak to sign run-page sessions (it is 6 bytes long): use at least 32 random bytes, e.g. `openssl rand -hex 32`\n',
    });
  }, 60_000);
});
