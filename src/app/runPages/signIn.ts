import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlockList } from 'node:net';
import { z } from 'zod';
import { CONTENT_SECURITY_POLICY, sendNotFound, type RunPagesGate } from '../../runs/http.js';
import { RUNS_PATH } from '../../runs/url.js';
import { parseCookies, setCookie, signValue, verifyValue } from './cookies.js';
import { DEFAULT_NEXT, nextPage } from './nextPage.js';
import { requestOrigin } from './origin.js';
import type { PermissionLookup } from './permission.js';
import { weakSecretReason } from './sessionSecret.js';
import type { SessionVersions } from './sessions.js';

export const AUTH_PATH = `${RUNS_PATH}/_auth`;
const SESSION_COOKIE = 'frognano_session';
const STATE_COOKIE = 'frognano_oauth';
/** A sign-in must come back from GitHub within this. */
const STATE_SECONDS = 600;
export const DEFAULT_SESSION_SECONDS = 3600;

export interface GitHubSignInOptions {
  /** The GitHub App's own OAuth credentials (the manifest flow writes them to .env). */
  clientId: string;
  clientSecret: string;
  /** Signs cookies (HMAC-SHA256); a weak one is refused (sessionSecret.ts). */
  sessionSecret: string;
  /** The server side of sessions (Redis): sign-out revokes. */
  sessions: SessionVersions;
  permission: PermissionLookup;
  /** https://github.com, or a GitHub Enterprise Server's web address. */
  webUrl?: string;
  /** https://api.github.com, or `<GHES>/api/v3`. */
  apiUrl?: string;
  /** The app's public base URL: the OAuth redirect and the Secure flag follow it. */
  publicUrl?: string;
  /** Without a public URL: the proxies whose Host and X-Forwarded-* headers are believed (origin.ts). */
  trustedProxies?: BlockList;
  sessionSeconds?: number;
  fetch?: typeof fetch;
}

const tokenAnswer = z.object({ access_token: z.string().min(1) });
const userAnswer = z.object({ login: z.string().min(1) });
const sessionCookie = z.object({ login: z.string().min(1), v: z.string().min(1) });

interface Gate {
  o: GitHubSignInOptions;
  webUrl: string;
  apiUrl: string;
  sessionSeconds: number;
  doFetch: typeof fetch;
}

/**
 * GitHub sign-in for the run pages: the OAuth web flow with the App's client id and secret, a random `state` bound
 * to the browser by a signed cookie (CSRF), then a short session cookie holding the login and its session version
 * (sessions.ts), so signing out revokes it. Every page then asks GitHub whether that login may read the repository;
 * no access and no run answer the same 404.
 */
export function createGitHubSignIn(o: GitHubSignInOptions): RunPagesGate {
  const weakness = weakSecretReason(o.sessionSecret);
  if (weakness) throw new Error(`the run pages' session secret is too weak (${weakness})`);
  if (!o.publicUrl && !o.trustedProxies)
    throw new Error('the run pages need a public URL or trusted proxies: the Host header alone is not believed');
  const g: Gate = {
    o,
    webUrl: (o.webUrl ?? 'https://github.com').replace(/\/+$/, ''),
    apiUrl: (o.apiUrl ?? 'https://api.github.com').replace(/\/+$/, ''),
    sessionSeconds: o.sessionSeconds ?? DEFAULT_SESSION_SECONDS,
    doFetch: o.fetch ?? fetch,
  };
  return {
    signOutPath: `${AUTH_PATH}/logout`,
    async handle(req, res, path) {
      if (!path.startsWith(`${AUTH_PATH}/`)) return false;
      const url = new URL(req.url ?? '/', 'http://x');
      if (path === `${AUTH_PATH}/login`) {
        const next = nextPage(url.searchParams.get('next'));
        if (next === 'unsafe') plain(res, 400, 'The page to return to is not a run page address.');
        else signIn(g, req, res, next);
      } else if (path === `${AUTH_PATH}/callback`) await callback(g, req, res, url);
      else if (path === `${AUTH_PATH}/logout`) await signOut(g, req, res);
      else sendNotFound(res);
      return true;
    },
    async allow(req, res, repo) {
      const login = await sessionLogin(g, req);
      if (!login) {
        const next = nextPage(req.url);
        signIn(g, req, res, next === 'unsafe' ? DEFAULT_NEXT : next);
        return null;
      }
      if (!(await o.permission(repo, login))) {
        sendNotFound(res);
        return null;
      }
      return { login };
    },
  };
}

function cookie(g: Gate, req: IncomingMessage, name: string, value: string, path: string, maxAgeSec: number): string {
  return setCookie(name, value, { path, maxAgeSec, secure: requestOrigin(req, g.o).secure });
}

/** To GitHub's sign-in page, with a fresh `state` kept in a signed cookie; 403 when the app cannot name itself. */
function signIn(g: Gate, req: IncomingMessage, res: ServerResponse, next: string): void {
  const { base } = requestOrigin(req, g.o);
  if (!base) return plain(res, 403, 'Sign in through the address the run pages are published at.');
  const state = randomBytes(24).toString('base64url');
  const signed = signValue(g.o.sessionSecret, { state, next, exp: Math.floor(Date.now() / 1000) + STATE_SECONDS });
  const q = new URLSearchParams({
    client_id: g.o.clientId,
    redirect_uri: `${base}${AUTH_PATH}/callback`,
    state,
    allow_signup: 'false',
  });
  redirect(res, `${g.webUrl}/login/oauth/authorize?${q}`, [
    cookie(g, req, STATE_COOKIE, signed, AUTH_PATH, STATE_SECONDS),
  ]);
}

async function callback(g: Gate, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const saved = verifyValue(g.o.sessionSecret, parseCookies(req.headers.cookie)[STATE_COOKIE]);
  const state = url.searchParams.get('state') ?? '';
  const code = url.searchParams.get('code') ?? '';
  const { base } = requestOrigin(req, g.o);
  if (!saved || typeof saved.state !== 'string' || !sameText(saved.state, state) || !code || !base) {
    return plain(
      res,
      400,
      'The sign-in could not be verified (it expired, or did not start here). Open the run page again.',
    );
  }
  const user = await githubLogin(g.doFetch, {
    webUrl: g.webUrl,
    apiUrl: g.apiUrl,
    clientId: g.o.clientId,
    clientSecret: g.o.clientSecret,
    code,
    redirectUri: `${base}${AUTH_PATH}/callback`,
  });
  if (!user) return plain(res, 403, 'GitHub did not confirm the sign-in. Open the run page again.');
  const v = await g.o.sessions.begin(user, g.sessionSeconds);
  const session = signValue(g.o.sessionSecret, {
    login: user,
    v,
    exp: Math.floor(Date.now() / 1000) + g.sessionSeconds,
  });
  const next = nextPage(typeof saved.next === 'string' ? saved.next : null);
  redirect(res, next === 'unsafe' ? DEFAULT_NEXT : next, [
    cookie(g, req, SESSION_COOKIE, session, RUNS_PATH, g.sessionSeconds),
    cookie(g, req, STATE_COOKIE, '', AUTH_PATH, 0),
  ]);
}

/** The signed-in login: a cookie signed by this app, unexpired, whose session version is still the login's. */
async function sessionLogin(g: Gate, req: IncomingMessage): Promise<string | null> {
  const session = sessionCookie.safeParse(
    verifyValue(g.o.sessionSecret, parseCookies(req.headers.cookie)[SESSION_COOKIE]),
  );
  if (!session.success) return null;
  return (await g.o.sessions.holds(session.data.login, session.data.v)) ? session.data.login : null;
}

/**
 * Sign-out changes state, so it is a POST from the page's own form: a GET (a link or an image on any site) only
 * shows that form, and a POST whose Origin is another site is refused. SameSite=Lax already keeps the cookie off a
 * cross-site POST; the Origin check holds where a browser sends the cookie anyway.
 * A signed-out login's sessions are revoked server-side (every copy of the cookie stops working), then the cookie
 * is cleared.
 */
async function signOut(g: Gate, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST') return signOutForm(res);
  if (!sameOrigin(g, req)) return plain(res, 403, 'Sign out from the run pages themselves.');
  const login = await sessionLogin(g, req);
  if (login) await g.o.sessions.revoke(login);
  res.setHeader('set-cookie', cookie(g, req, SESSION_COOKIE, '', RUNS_PATH, 0));
  plain(res, 200, 'Signed out.');
}

/** The browser's Origin (or, without one, its Sec-Fetch-Site) says the POST came from the run pages' own origin. */
function sameOrigin(g: Gate, req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) {
    const site = req.headers['sec-fetch-site'];
    return site === undefined || site === 'same-origin' || site === 'none';
  }
  const { base } = requestOrigin(req, g.o);
  return base !== null && origin === base;
}

const SIGN_OUT_FORM = `<!doctype html><title>Sign out</title><h1>Sign out of the run pages?</h1><form method="post" action="${AUTH_PATH}/logout"><button type="submit">Sign out</button></form>`;

function signOutForm(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'private, no-store',
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-frame-options': 'DENY',
  });
  res.end(SIGN_OUT_FORM);
}

/** The code for a token, the token for the login; the token itself is dropped at once. */
async function githubLogin(
  doFetch: typeof fetch,
  o: { webUrl: string; apiUrl: string; clientId: string; clientSecret: string; code: string; redirectUri: string },
): Promise<string | null> {
  const tokenRes = await doFetch(`${o.webUrl}/login/oauth/access_token`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: o.clientId,
      client_secret: o.clientSecret,
      code: o.code,
      redirect_uri: o.redirectUri,
    }),
  });
  const token = tokenAnswer.safeParse(await tokenRes.json().catch(() => null));
  if (!tokenRes.ok || !token.success) return null;
  const userRes = await doFetch(`${o.apiUrl}/user`, {
    headers: {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${token.data.access_token}`,
      'user-agent': 'frognano-bot',
    },
  });
  const user = userAnswer.safeParse(await userRes.json().catch(() => null));
  return userRes.ok && user.success ? user.data.login : null;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function redirect(res: ServerResponse, location: string, cookies: string[]): void {
  res.writeHead(302, { location, 'set-cookie': cookies, 'cache-control': 'private, no-store', 'content-length': 0 });
  res.end();
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'private, no-store' });
  res.end(`${text}\n`);
}
