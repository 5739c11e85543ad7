import type { IncomingMessage, ServerResponse } from 'node:http';
import { redact } from '../util/redact.js';
import { PAGE_CSS, PAGE_JS } from './page/assets.js';
import { renderRunPage } from './page/render.js';
import type { RoundRef, RoundSummary, RunRef, StoredRound } from './record.js';
import { RUNS_PATH } from './url.js';

/** What the pages read: the trajectory store, or one file for `frognano view`. */
export interface RoundSource {
  listRounds(ref: RunRef): Promise<RoundSummary[]>;
  getRound(ref: RoundRef): Promise<StoredRound | null>;
}

/**
 * Who may read a repository's runs (the app's GitHub sign-in). `handle` answers the gate's own paths
 * (`/runs/_auth/...`); `allow` either resolves to the signed-in user, or answers the request itself (a redirect
 * to sign in, or the same 404 a missing run gets) and resolves to null.
 */
export interface RunPagesGate {
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
  allow(
    req: IncomingMessage,
    res: ServerResponse,
    repo: { owner: string; repo: string },
  ): Promise<{ login: string } | null>;
  signOutPath: string;
}

export interface RunPagesOptions {
  source: RoundSource;
  /** Absent for `frognano view` (a local server on 127.0.0.1 with no sign-in). */
  gate?: RunPagesGate;
  githubUrl?: string;
  log?: { warn(obj: object, msg: string): void };
}

export const STATIC_PATH = `${RUNS_PATH}/_static`;

/** No inline script or style anywhere; the page's own files only; never framed. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'cache-control': 'private, no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const PAGE_ROUTE =
  /^\/runs\/([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100})\/([1-9][0-9]{0,9})(?:\/([0-9]{1,6}))?\/?$/;

/** Where a sign-in without a page to return to lands; it names no run, so it needs no permission. */
const INDEX_PAGE =
  '<!doctype html><title>frognano runs</title><h1>frognano runs</h1><p>Open a run from the link in its pull request, its status comment or its approval check.</p>';

/** The page a run that does not exist gets, and a user without access: the same bytes, so neither tells. */
export function sendNotFound(res: ServerResponse): void {
  send(
    res,
    404,
    'text/html; charset=utf-8',
    '<!doctype html><title>Not found</title><h1>Not found</h1><p>There is no run here, or you cannot read it.</p>',
  );
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...extra });
  res.end(body);
}

/** Builds the /runs handler: true when it took the request (answering it asynchronously), false for other paths. */
export function createRunPagesHandler(o: RunPagesOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path !== RUNS_PATH && !path.startsWith(`${RUNS_PATH}/`)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'Method Not Allowed\n', { allow: 'GET, HEAD' });
      return true;
    }
    answer(o, req, res, path).catch((err: unknown) => {
      o.log?.warn({ err: redact(err instanceof Error ? err.message : String(err)) }, 'run page failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'The run page could not be shown.\n');
      else res.end();
    });
    return true;
  };
}

async function answer(o: RunPagesOptions, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  if (path === `${STATIC_PATH}/page.css`)
    return send(res, 200, 'text/css; charset=utf-8', PAGE_CSS, { 'cache-control': 'public, max-age=300' });
  if (path === `${STATIC_PATH}/page.js`)
    return send(res, 200, 'text/javascript; charset=utf-8', PAGE_JS, { 'cache-control': 'public, max-age=300' });
  if (o.gate && (await o.gate.handle(req, res, path))) return;
  if (path === RUNS_PATH || path === `${RUNS_PATH}/`) return send(res, 200, 'text/html; charset=utf-8', INDEX_PAGE);
  const m = PAGE_ROUTE.exec(path);
  // `.` and `..` match the name pattern but name no repository (and no store folder).
  if (!m || /^\.+$/.test(m[1]!) || /^\.+$/.test(m[2]!)) return sendNotFound(res);
  const run: RunRef = { owner: m[1]!, repo: m[2]!, issueNumber: Number(m[3]) };
  const user = o.gate ? await o.gate.allow(req, res, run) : undefined;
  if (user === null) return; // the gate answered
  const html = await renderRunResponse(o, run, m[4] === undefined ? undefined : Number(m[4]), user);
  if (html === null) return sendNotFound(res);
  send(res, 200, 'text/html; charset=utf-8', html);
}

/** The page for a run's round (its latest when none is named); null when there is no such run or round. */
export async function renderRunResponse(
  o: Pick<RunPagesOptions, 'source' | 'githubUrl' | 'gate'>,
  run: RunRef,
  round: number | undefined,
  user?: { login: string },
): Promise<string | null> {
  const rounds = await o.source.listRounds(run);
  if (rounds.length === 0) return null;
  const wanted = round ?? rounds[rounds.length - 1]!.round;
  const stored = await o.source.getRound({ ...run, round: wanted });
  if (!stored) return null;
  const base = `${RUNS_PATH}/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}/${run.issueNumber}`;
  return renderRunPage({
    round: stored,
    rounds,
    roundHref: (n) => `${base}/${n}`,
    staticBase: STATIC_PATH,
    githubUrl: o.githubUrl,
    user: user && o.gate ? { login: user.login, signOutHref: o.gate.signOutPath } : undefined,
  });
}
