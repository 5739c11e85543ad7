import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nock from 'nock';
import pino from 'pino';
import { Probot } from 'probot';
import { signValue } from '../../src/app/runPages/cookies.js';
import { runPagesFromEnv, type RunPagesMount } from '../../src/app/runPages/index.js';
import { makeRound } from '../runs/fixture.js';
import { API, INSTALLATION_ID, nockInstallationToken, TestOctokit, testPrivateKey } from './helpers.js';

/** The run pages as main.ts mounts them: settings from the environment, the permission asked with the App's own auth. */
let dir: string;
let server: Server;
let base: string;
let mount: RunPagesMount;
const probot = new Probot({
  appId: 123,
  privateKey: testPrivateKey(),
  secret: 's',
  Octokit: TestOctokit,
  log: pino({ level: 'silent' }),
});

beforeAll(async () => {
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-mount-'));
  mount = runPagesFromEnv(probot, {
    GITHUB_CLIENT_ID: 'Iv1.abc',
    GITHUB_CLIENT_SECRET: 'secret',
    FROGNANO_SESSION_SECRET: 'session-key',
    FROGNANO_TRAJECTORY_STORE: dir,
    FROGNANO_PUBLIC_URL: 'https://bot.example.org',
  })!;
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
  nock.cleanAll();
  nock.enableNetConnect();
});

const session = (login: string) =>
  `frognano_session=${signValue('session-key', { login, exp: Math.floor(Date.now() / 1000) + 600 })}`;

describe('runPagesFromEnv', () => {
  it("is off without the App's OAuth credentials", () => {
    expect(runPagesFromEnv(probot, {})).toBeNull();
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
    const ok = await fetch(`${base}/runs/Codertocat/Hello-World/1`, { headers: { cookie: session('reader') } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('reader · <a href="/runs/_auth/logout">sign out</a>');
    const denied = await fetch(`${base}/runs/Codertocat/Hello-World/1`, { headers: { cookie: session('stranger') } });
    expect(denied.status).toBe(404);
    expect(perms.isDone()).toBe(true);
    expect(installation.isDone()).toBe(true);
    token.persist(false);
  });
});
