import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { signValue, verifyValue } from '../../src/app/runPages/cookies.js';
import { parseTrustedProxies } from '../../src/app/runPages/origin.js';
import { weakSecretReason } from '../../src/app/runPages/sessionSecret.js';
import { redisSessionVersions } from '../../src/app/runPages/sessions.js';
import { createGitHubSignIn, type GitHubSignInOptions } from '../../src/app/runPages/signIn.js';
import { createRunPagesHandler, type RoundSource } from '../../src/runs/http.js';
import { CLIENT_ID, CLIENT_SECRET, startFakeGitHub, type FakeGitHub } from './fakeGitHub.js';
import { makeRound } from './fixture.js';

/**
 * GitHub sign-in over real HTTP: the app's handler on 127.0.0.1, the GitHub stand-in for the OAuth flow, sessions
 * in a real Redis. Two app instances share that Redis, as replicas (or an app before and after a restart) do.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECRET = randomBytes(32).toString('hex');
const round0 = makeRound({ round: 0 });
const source: RoundSource = {
  listRounds: async (ref) => (ref.owner === 'octo' && ref.issueNumber === 12 ? [round0.summary] : []),
  getRound: async (ref) => (ref.owner === 'octo' && ref.issueNumber === 12 && ref.round === 0 ? round0 : null),
};

let redis: Redis;
let github: FakeGitHub;
const servers: Server[] = [];

/** The sign-in as the app builds it, against the GitHub stand-in, letting everyone read; `extra` changes it. */
const signInGate = (extra: Partial<GitHubSignInOptions>) =>
  createGitHubSignIn({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    sessionSecret: SECRET,
    sessions: redisSessionVersions(redis),
    webUrl: github.url,
    apiUrl: github.url,
    permission: async () => true,
    ...extra,
  });

/** An app instance serving the run pages; its gate built once it knows its own address. */
async function startApp(options: (base: string) => Partial<GitHubSignInOptions> = () => ({})): Promise<string> {
  let handler: ReturnType<typeof createRunPagesHandler> | undefined;
  const server = createServer((req, res) => void (handler?.(req, res) || res.writeHead(418).end()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const gate = signInGate({ publicUrl: base, ...options(base) });
  handler = createRunPagesHandler({ source, gate });
  return base;
}

const stateOf = (setCookie: string | null) => verifyValue(SECRET, /frognano_oauth=([^;]*)/.exec(setCookie ?? '')?.[1]);
const sessionOf = (setCookie: string | null) => /frognano_session=[^;]+/.exec(setCookie ?? '')?.[0];
const page = (base: string, cookie?: string) =>
  fetch(`${base}/runs/octo/demo/12`, { headers: cookie ? { cookie } : {}, redirect: 'manual' });

/** The whole flow as a browser makes it: the page, GitHub's sign-in, the callback; the session cookie and landing. */
async function signIn(base: string, login: string, start = '/runs/octo/demo/12') {
  github.signInAs = login;
  const first = await fetch(`${base}${start}`, { redirect: 'manual' });
  const state = /frognano_oauth=[^;]+/.exec(first.headers.get('set-cookie') ?? '')![0];
  const atGitHub = await fetch(first.headers.get('location')!, { redirect: 'manual' });
  const back = await fetch(atGitHub.headers.get('location')!, { headers: { cookie: state }, redirect: 'manual' });
  return {
    status: back.status,
    cookie: sessionOf(back.headers.get('set-cookie')),
    landed: back.headers.get('location'),
  };
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  github = await startFakeGitHub();
});

afterAll(async () => {
  for (const s of servers) await new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())));
  await github?.close();
  await redis?.quit();
});

describe('the session secret', () => {
  it('refuses a short, dictionary, repeated or placeholder key and accepts a random one', () => {
    for (const weak of [
      'k',
      'hunter2',
      'passwordpasswordpasswordpassword',
      'ab'.repeat(20),
      'REPLACE_WITH_A_LONG_RANDOM_VALUE_PLEASE',
    ])
      expect(weakSecretReason(weak)).not.toBeNull();
    expect(weakSecretReason('abcdefghijklmnopqrstuvwxyz0123456789')).toMatch(/neighbouring/);
    for (let i = 0; i < 50; i++) {
      expect(weakSecretReason(randomBytes(32).toString('hex'))).toBeNull();
      expect(weakSecretReason(randomBytes(32).toString('base64'))).toBeNull();
    }
  });

  it('is checked when the sign-in is built: a dictionary word signs nothing', () => {
    const build = (sessionSecret: string) => signInGate({ sessionSecret, publicUrl: 'https://bot.example.org' });
    expect(() => build('sunshine')).toThrow(/session secret is too weak \(it is 8 bytes long\)/);
    expect(() => build(SECRET)).not.toThrow();
  });
});

describe('GitHub sign-in', () => {
  let base: string;
  beforeAll(async () => {
    base = await startApp();
  });

  it('sends a visitor without a session to GitHub with a state bound to a signed cookie', async () => {
    const res = await page(base);
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(`${github.url}/login/oauth/authorize`);
    expect(to.searchParams.get('redirect_uri')).toBe(`${base}/runs/_auth/callback`);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^frognano_oauth=[^;]+; Path=\/runs\/_auth; Max-Age=600; HttpOnly; SameSite=Lax$/);
    expect(stateOf(cookie)).toMatchObject({ state: to.searchParams.get('state'), next: '/runs/octo/demo/12' });
  });

  it('signs in through GitHub and back to the page it started from', async () => {
    const login = `alice${randomBytes(3).toString('hex')}`;
    const { status, cookie, landed } = await signIn(base, login);
    expect({ status, landed }).toEqual({ status: 302, landed: '/runs/octo/demo/12' });
    const res = await page(base, cookie);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(
      `<form class="user" method="post" action="/runs/_auth/logout">${login} · <button type="submit">sign out</button></form>`,
    );
  });

  it('refuses a callback whose state does not match its cookie, and never redirects off the app', async () => {
    const cookie = `frognano_oauth=${signValue(SECRET, { state: 'abc', next: 'https://evil.test/', exp: Date.now() / 1000 + 60 })}`;
    expect(
      (await fetch(`${base}/runs/_auth/callback?code=c&state=abd`, { headers: { cookie }, redirect: 'manual' })).status,
    ).toBe(400);
    expect((await fetch(`${base}/runs/_auth/callback?code=c&state=abc`, { redirect: 'manual' })).status).toBe(400);
    for (const next of ['//evil.test/x', 'https://evil.test/runs/', '/\\evil.test/runs/', '/runs/../../x']) {
      const login = await fetch(`${base}/runs/_auth/login?next=${encodeURIComponent(next)}`, { redirect: 'manual' });
      expect(stateOf(login.headers.get('set-cookie'))).toMatchObject({ next: '/runs/' });
    }
  });

  it('treats a forged, expired or versionless session as none', async () => {
    const login = `carol${randomBytes(3).toString('hex')}`;
    const { cookie } = await signIn(base, login);
    const v = verifyValue(SECRET, cookie!.split('=')[1])!.v;
    const forged = signValue(randomBytes(32).toString('hex'), { login, v, exp: Date.now() / 1000 + 600 });
    const expired = signValue(SECRET, { login, v, exp: Date.now() / 1000 - 1 });
    const versionless = signValue(SECRET, { login, exp: Date.now() / 1000 + 600 });
    const otherVersion = signValue(SECRET, { login, v: 'guess', exp: Date.now() / 1000 + 600 });
    for (const value of [forged, expired, versionless, otherVersion])
      expect((await page(base, `frognano_session=${value}`)).status).toBe(302);
    expect((await page(base, cookie)).status).toBe(200);
  });
});

describe('sign-out', () => {
  it('revokes the session: the same cookie, replayed after signing out, signs in again', async () => {
    const base = await startApp();
    const login = `dave${randomBytes(3).toString('hex')}`;
    const { cookie } = await signIn(base, login);
    expect((await page(base, cookie)).status).toBe(200);
    const out = await fetch(`${base}/runs/_auth/logout`, {
      method: 'POST',
      headers: { cookie: cookie!, origin: base },
    });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^frognano_session=; Path=\/runs; Max-Age=0;/);
    const replay = await page(base, cookie);
    expect(replay.status).toBe(302);
    expect(new URL(replay.headers.get('location')!).pathname).toBe('/login/oauth/authorize');
    // A new sign-in gets a session again.
    expect((await page(base, (await signIn(base, login)).cookie)).status).toBe(200);
  });

  it('holds across app instances sharing Redis: replicas and a restarted app', async () => {
    const [a, b] = [await startApp(), await startApp()];
    const login = `erin${randomBytes(3).toString('hex')}`;
    const { cookie } = await signIn(a, login);
    expect((await page(b, cookie)).status).toBe(200);
    const restarted = await startApp();
    expect((await page(restarted, cookie)).status).toBe(200);
    await fetch(`${b}/runs/_auth/logout`, { method: 'POST', headers: { cookie: cookie!, origin: b } });
    for (const app of [a, b, restarted]) expect((await page(app, cookie)).status).toBe(302);
  });
});

describe('sign-out is not a cross-site request', () => {
  it('a GET (a link or image anywhere) only shows the form; the session holds', async () => {
    const base = await startApp();
    const { cookie } = await signIn(base, `fay${randomBytes(3).toString('hex')}`);
    const get = await fetch(`${base}/runs/_auth/logout`, { headers: { cookie: cookie! } });
    expect(get.status).toBe(200);
    expect(get.headers.get('set-cookie')).toBeNull();
    expect(get.headers.get('content-security-policy')).toContain("form-action 'self'");
    expect(await get.text()).toContain('<form method="post" action="/runs/_auth/logout">');
    expect((await page(base, cookie)).status).toBe(200);
  });

  it('a POST from another origin is refused and revokes nothing', async () => {
    const base = await startApp();
    const { cookie } = await signIn(base, `gus${randomBytes(3).toString('hex')}`);
    const attempts: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of attempts) {
      const out = await fetch(`${base}/runs/_auth/logout`, {
        method: 'POST',
        headers: { cookie: cookie!, ...headers },
      });
      expect(out.status).toBe(403);
      expect(out.headers.get('set-cookie')).toBeNull();
    }
    expect((await page(base, cookie)).status).toBe(200);
  });
});

describe('the page to return to after sign-in', () => {
  let base: string;
  beforeAll(async () => {
    base = await startApp();
  });

  it('is resolved as a path before it is checked: no dot segment reaches the sign-in paths', async () => {
    for (const next of [
      '/runs/./_auth/logout',
      '/runs/x/../_auth/logout',
      '/runs/%2e/_auth/logout',
      '/runs/%5Fauth/logout',
    ]) {
      const login = await fetch(`${base}/runs/_auth/login?next=${encodeURIComponent(next)}`, { redirect: 'manual' });
      expect(login.status).toBe(302);
      expect(stateOf(login.headers.get('set-cookie'))).toMatchObject({ next: '/runs/' });
    }
    const kept = await fetch(`${base}/runs/_auth/login?next=${encodeURIComponent('/runs/octo/./demo/12/0?x=1')}`, {
      redirect: 'manual',
    });
    expect(stateOf(kept.headers.get('set-cookie'))).toMatchObject({ next: '/runs/octo/demo/12/0?x=1' });
    const { landed } = await signIn(
      base,
      `frank${randomBytes(3).toString('hex')}`,
      '/runs/_auth/login?next=/runs/./_auth/logout',
    );
    expect(landed).toBe('/runs/');
  });

  it('with a character a header cannot carry (U+202E, a control, a space) is refused with 400, not a 500', async () => {
    for (const next of ['/runs/\u202eevil', '/runs/a\tb', '/runs/a b', '/runs/\u0000']) {
      const login = await fetch(`${base}/runs/_auth/login?next=${encodeURIComponent(next)}`, { redirect: 'manual' });
      expect(login.status).toBe(400);
      expect(login.headers.get('set-cookie')).toBeNull();
    }
    // A state cookie carrying one anyway (signed by this app) lands on the index, not on a 500.
    github.signInAs = 'grace';
    const first = await fetch(`${base}/runs/_auth/login?next=/runs/`, { redirect: 'manual' });
    const state = new URL(first.headers.get('location')!).searchParams.get('state')!;
    const cookie = `frognano_oauth=${signValue(SECRET, { state, next: '/runs/\u202e', exp: Date.now() / 1000 + 60 })}`;
    const atGitHub = await fetch(first.headers.get('location')!, { redirect: 'manual' });
    const back = await fetch(atGitHub.headers.get('location')!, { headers: { cookie }, redirect: 'manual' });
    expect({ status: back.status, location: back.headers.get('location') }).toEqual({
      status: 302,
      location: '/runs/',
    });
  });
});

describe('the app address without a public URL', () => {
  const forged = { host: 'evil.test', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.test' };

  it('takes Host and X-Forwarded-* from a configured proxy only', async () => {
    const proxied = await startApp(() => ({ publicUrl: undefined, trustedProxies: parseTrustedProxies('127.0.0.1') }));
    const res = await fetch(`${proxied}/runs/octo/demo/12`, {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'bot.example.org' },
      redirect: 'manual',
    });
    expect(new URL(res.headers.get('location')!).searchParams.get('redirect_uri')).toBe(
      'https://bot.example.org/runs/_auth/callback',
    );
    expect(res.headers.get('set-cookie')).toMatch(/; Secure$/);
    const elsewhere = await startApp(() => ({
      publicUrl: undefined,
      trustedProxies: parseTrustedProxies('10.0.0.0/8'),
    }));
    const direct = await fetch(`${elsewhere}/runs/octo/demo/12`, { headers: forged, redirect: 'manual' });
    expect(direct.status).toBe(403);
    expect(direct.headers.get('location')).toBeNull();
  });

  it('with a public URL, ignores the headers', async () => {
    const base = await startApp(() => ({ publicUrl: 'https://bot.example.org' }));
    const res = await fetch(`${base}/runs/octo/demo/12`, { headers: forged, redirect: 'manual' });
    expect(new URL(res.headers.get('location')!).searchParams.get('redirect_uri')).toBe(
      'https://bot.example.org/runs/_auth/callback',
    );
  });

  it('is never the Host header alone', () => {
    expect(() => signInGate({})).toThrow(/public URL or trusted proxies/);
  });
});
