import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { sendNotFound, type RunPagesGate } from '../../runs/http.js';
import { RUNS_PATH } from '../../runs/url.js';
import { parseCookies, setCookie, signValue, verifyValue } from './cookies.js';
import type { PermissionLookup } from './permission.js';

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
  /** Signs cookies (HMAC-SHA256). */
  sessionSecret: string;
  permission: PermissionLookup;
  /** https://github.com, or a GitHub Enterprise Server's web address. */
  webUrl?: string;
  /** https://api.github.com, or `<GHES>/api/v3`. */
  apiUrl?: string;
  /** The app's public base URL: the OAuth redirect and the Secure flag follow it; else the request's Host. */
  publicUrl?: string;
  sessionSeconds?: number;
  fetch?: typeof fetch;
}

const tokenAnswer = z.object({ access_token: z.string().min(1) });
const userAnswer = z.object({ login: z.string().min(1) });

/**
 * GitHub sign-in for the run pages: the OAuth web flow with the App's client id and secret, a random `state` bound
 * to the browser by a signed cookie (CSRF), then a short session cookie holding only the login. Every page then asks
 * GitHub whether that login may read the repository; no access and no run answer the same 404.
 */
export function createGitHubSignIn(o: GitHubSignInOptions): RunPagesGate {
  const webUrl = (o.webUrl ?? 'https://github.com').replace(/\/+$/, '');
  const apiUrl = (o.apiUrl ?? 'https://api.github.com').replace(/\/+$/, '');
  const sessionSeconds = o.sessionSeconds ?? DEFAULT_SESSION_SECONDS;
  const doFetch = o.fetch ?? fetch;
  const base = (req: IncomingMessage) =>
    o.publicUrl?.replace(/\/+$/, '') ?? `${isHttps(req, o.publicUrl) ? 'https' : 'http'}://${req.headers.host}`;
  const cookie = (req: IncomingMessage, name: string, value: string, path: string, maxAgeSec: number) =>
    setCookie(name, value, { path, maxAgeSec, secure: isHttps(req, o.publicUrl) });

  const login = (req: IncomingMessage, res: ServerResponse, next: string) => {
    const state = randomBytes(24).toString('base64url');
    const signed = signValue(o.sessionSecret, { state, next, exp: Math.floor(Date.now() / 1000) + STATE_SECONDS });
    const q = new URLSearchParams({
      client_id: o.clientId,
      redirect_uri: `${base(req)}${AUTH_PATH}/callback`,
      state,
      allow_signup: 'false',
    });
    redirect(res, `${webUrl}/login/oauth/authorize?${q}`, [
      cookie(req, STATE_COOKIE, signed, AUTH_PATH, STATE_SECONDS),
    ]);
  };

  const callback = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const saved = verifyValue(o.sessionSecret, parseCookies(req.headers.cookie)[STATE_COOKIE]);
    const state = url.searchParams.get('state') ?? '';
    const code = url.searchParams.get('code') ?? '';
    if (!saved || typeof saved.state !== 'string' || !sameText(saved.state, state) || !code) {
      return plain(
        res,
        400,
        'The sign-in could not be verified (it expired, or did not start here). Open the run page again.',
      );
    }
    const user = await githubLogin(doFetch, {
      webUrl,
      apiUrl,
      clientId: o.clientId,
      clientSecret: o.clientSecret,
      code,
      redirectUri: `${base(req)}${AUTH_PATH}/callback`,
    });
    if (!user) return plain(res, 403, 'GitHub did not confirm the sign-in. Open the run page again.');
    const session = signValue(o.sessionSecret, { login: user, exp: Math.floor(Date.now() / 1000) + sessionSeconds });
    redirect(res, safeNext(typeof saved.next === 'string' ? saved.next : null), [
      cookie(req, SESSION_COOKIE, session, RUNS_PATH, sessionSeconds),
      cookie(req, STATE_COOKIE, '', AUTH_PATH, 0),
    ]);
  };

  return {
    signOutPath: `${AUTH_PATH}/logout`,
    async handle(req, res, path) {
      if (!path.startsWith(`${AUTH_PATH}/`)) return false;
      const url = new URL(req.url ?? '/', 'http://x');
      if (path === `${AUTH_PATH}/login`) login(req, res, safeNext(url.searchParams.get('next')));
      else if (path === `${AUTH_PATH}/callback`) await callback(req, res, url);
      else if (path === `${AUTH_PATH}/logout`) {
        res.setHeader('set-cookie', cookie(req, SESSION_COOKIE, '', RUNS_PATH, 0));
        plain(res, 200, 'Signed out.');
      } else sendNotFound(res);
      return true;
    },
    async allow(req, res, repo) {
      const session = verifyValue(o.sessionSecret, parseCookies(req.headers.cookie)[SESSION_COOKIE]);
      if (!session || typeof session.login !== 'string') {
        login(req, res, safeNext(req.url));
        return null;
      }
      if (!(await o.permission(repo, session.login))) {
        sendNotFound(res);
        return null;
      }
      return { login: session.login };
    },
  };
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

/** Only a run page of this app: never another site (`//evil`, `https://…`) after signing in. */
function safeNext(next: string | null | undefined): string {
  return next && next.startsWith(`${RUNS_PATH}/`) && !next.startsWith(`${AUTH_PATH}/`) && !/[\\\s]/.test(next)
    ? next
    : `${RUNS_PATH}/`;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function isHttps(req: IncomingMessage, publicUrl?: string): boolean {
  if (publicUrl) return publicUrl.startsWith('https:');
  return Boolean((req.socket as { encrypted?: boolean }).encrypted) || req.headers['x-forwarded-proto'] === 'https';
}

function redirect(res: ServerResponse, location: string, cookies: string[]): void {
  res.writeHead(302, { location, 'set-cookie': cookies, 'cache-control': 'private, no-store', 'content-length': 0 });
  res.end();
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'private, no-store' });
  res.end(`${text}\n`);
}
