import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nock from 'nock';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { signValue } from '../../src/app/runPages/cookies.js';
import { runPagesFromEnv, type RunPagesMount } from '../../src/app/runPages/index.js';
import { redisSessionVersions } from '../../src/app/runPages/sessions.js';
import { makeRound } from '../runs/fixture.js';
import { API, INSTALLATION_ID, nockInstallationToken, REDIS_URL, testProbot } from './helpers.js';

/** The run pages as main.ts mounts them: settings from the environment, the permission asked with the App's own auth. */
let dir: string;
let server: Server;
let base: string;
let mount: RunPagesMount;
let redis: Redis;
const SESSION_SECRET = randomBytes(32).toString('hex');
const ENV = {
  GITHUB_CLIENT_ID: 'Iv1.abc',
  GITHUB_CLIENT_SECRET: randomBytes(20).toString('hex'),
  FROGNANO_SESSION_SECRET: SESSION_SECRET,
  FROGNANO_PUBLIC_URL: 'https://bot.example.org',
};
const probot = testProbot();

beforeAll(async () => {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-mount-'));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  mount = runPagesFromEnv(probot, redis, { ...ENV, FROGNANO_TRAJECTORY_STORE: dir })!;
  await mount.store.putRound(
    makeRound({ owner: 'Codertocat', repo: 'Hello-World', issueNumber: 1, steps: 3, bytes: 5000 }),
  );
  server = createServer((req, res) => void (mount.handler(req, res) || res.writeHead(418).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  mount?.stop();
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
  await redis?.quit();
  nock.cleanAll();
  nock.enableNetConnect();
});

/** A session as a sign-in makes it: its version in Redis, the cookie signed with the configured secret. */
const session = async (login: string) => {
  const v = await redisSessionVersions(redis).begin(login, 600);
  return `frognano_session=${signValue(SESSION_SECRET, { login, v, exp: Math.floor(Date.now() / 1000) + 600 })}`;
};

describe('runPagesFromEnv', () => {
  it("is off without the App's OAuth credentials", () => {
    expect(runPagesFromEnv(probot, redis, {})).toBeNull();
  });

  it('sends a visitor to GitHub to sign in, with the public URL as the redirect and a Secure cookie', async () => {
    const res = await fetch(`${base}/runs/Codertocat/Hello-World/1`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin + to.pathname).toBe('https://github.com/login/oauth/authorize');
    expect(to.searchParams.get('client_id')).toBe('Iv1.abc');
    expect(to.searchParams.get('redirect_uri')).toBe('https://bot.example.org/runs/_auth/callback');
    expect(res.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Lax; Secure$/);
  });

  it('on GitHub Enterprise Server the sign-in goes to GHE_HOST with GHE_PROTOCOL, as Probot reaches it', async () => {
    const pages = runPagesFromEnv(probot, redis, {
      ...ENV,
      FROGNANO_TRAJECTORY_STORE: dir,
      GHE_HOST: 'ghe.internal:8080',
      GHE_PROTOCOL: 'http',
    })!;
    const ghes = createServer((req, res) => void (pages.handler(req, res) || res.writeHead(418).end()));
    await new Promise<void>((r) => ghes.listen(0, '127.0.0.1', r));
    try {
      const port = (ghes.address() as AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/runs/Codertocat/Hello-World/1`, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const to = new URL(res.headers.get('location')!);
      expect(to.origin + to.pathname).toBe('http://ghe.internal:8080/login/oauth/authorize');
    } finally {
      pages.stop();
      await new Promise<void>((r) => ghes.close(() => r()));
    }
  });

  it("asks GitHub with the installation's token whether the user may read the repository", async () => {
    const installation = nock(API)
      .get('/repos/Codertocat/Hello-World/installation')
      .times(2)
      .reply(200, { id: INSTALLATION_ID });
    const token = nockInstallationToken();
    const perms = nock(API)
      .get('/repos/Codertocat/Hello-World/collaborators/reader/permission')
      .reply(200, { permission: 'read', role_name: 'read' })
      .get('/repos/Codertocat/Hello-World/collaborators/stranger/permission')
      .reply(200, { permission: 'none', role_name: 'none' });
    const ok = await fetch(`${base}/runs/Codertocat/Hello-World/1`, { headers: { cookie: await session('reader') } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(
      '<form class="user" method="post" action="/runs/_auth/logout">reader · <button type="submit">sign out</button></form>',
    );
    const denied = await fetch(`${base}/runs/Codertocat/Hello-World/1`, {
      headers: { cookie: await session('stranger') },
    });
    expect(denied.status).toBe(404);
    expect(perms.isDone()).toBe(true);
    expect(installation.isDone()).toBe(true);
    token.persist(false);
  });

  it('refuses a weak FROGNANO_SESSION_SECRET, naming it, what it needs and how to make one', () => {
    // The Kubernetes template's placeholder too: a copy applied unchanged must not start.
    const template = readFileSync('deploy/k8s/secret.template.yaml', 'utf8');
    const placeholder = /^ {2}FROGNANO_SESSION_SECRET: '([^']+)'$/m.exec(template)![1]!;
    for (const weak of ['session-key', 'correcthorse', 'x'.repeat(40), placeholder])
      expect(() => runPagesFromEnv(probot, redis, { ...ENV, FROGNANO_SESSION_SECRET: weak })).toThrow(
        /^FROGNANO_SESSION_SECRET is too weak to sign run-page sessions \(.+\): use at least 32 random bytes, e\.g\. `openssl rand -hex 32`$/,
      );
    // Unset, the key is derived from the client secret, which must then be strong itself.
    const { FROGNANO_SESSION_SECRET: _, ...derived } = ENV;
    expect(() => runPagesFromEnv(probot, redis, { ...derived, GITHUB_CLIENT_SECRET: 'secret' })).toThrow(
      /^FROGNANO_SESSION_SECRET is not set and GITHUB_CLIENT_SECRET is too weak to derive it from/,
    );
    const pages = runPagesFromEnv(probot, redis, { ...derived, FROGNANO_TRAJECTORY_STORE: dir });
    expect(pages).not.toBeNull();
    pages!.stop();
  });

  it('without FROGNANO_PUBLIC_URL believes Host and X-Forwarded-* only from FROGNANO_TRUSTED_PROXIES', async () => {
    const { FROGNANO_PUBLIC_URL: _, ...noUrl } = ENV;
    expect(runPagesFromEnv(probot, redis, { ...noUrl, FROGNANO_TRAJECTORY_STORE: dir })).toBeNull();
    expect(() => runPagesFromEnv(probot, redis, { ...noUrl, FROGNANO_TRUSTED_PROXIES: 'proxy.local' })).toThrow(
      /^FROGNANO_TRUSTED_PROXIES: "proxy.local" is not an IP address or CIDR range$/,
    );
    const forged = { host: 'evil.test', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.test' };
    for (const [proxies, status] of [
      ['10.0.0.0/8, fd00::/8', 403],
      ['127.0.0.1', 302],
    ] as const) {
      const pages = runPagesFromEnv(probot, redis, {
        ...noUrl,
        FROGNANO_TRAJECTORY_STORE: dir,
        FROGNANO_TRUSTED_PROXIES: proxies,
      })!;
      const other = createServer((req, res) => void (pages.handler(req, res) || res.writeHead(418).end()));
      await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
      const res = await rawGet(
        `http://127.0.0.1:${(other.address() as AddressInfo).port}/runs/Codertocat/Hello-World/1`,
        forged,
      );
      await new Promise<void>((r) => other.close(() => r()));
      pages.stop();
      expect(res.status).toBe(status);
      if (status === 302) {
        expect(new URL(res.location!).searchParams.get('redirect_uri')).toBe('https://evil.test/runs/_auth/callback');
        expect(res.cookie).toMatch(/; Secure$/);
      } else expect(res.location).toBeUndefined();
    }
  });
});

/** A GET with exactly these headers (fetch would not send a Host of our choosing). */
function rawGet(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; location?: string; cookie?: string }>((resolve, reject) => {
    request(url, { headers }, (res) => {
      res.resume();
      resolve({ status: res.statusCode!, location: res.headers.location, cookie: res.headers['set-cookie']?.[0] });
    })
      .on('error', reject)
      .end();
  });
}
