import type { IncomingMessage, ServerResponse } from 'node:http';
import { stepFacts } from '../leaf/trajectory.js';
import { jsonPieces } from '../util/boundedJson.js';
import { redact } from '../util/redact.js';
import { PAGE_CSS, PAGE_JS } from './page/assets.js';
import type { PageLimits } from './page/limits.js';
import { renderRunPageChunks } from './page/render.js';
import type { RoundRef, RoundSummary, RunRef, StoredRound } from './record.js';
import { SEND_DEFAULTS, sendChunks, type SendOptions } from './send.js';
import { createSlots, SLOT_DEFAULTS, type SlotLimits, type Slots } from './slots.js';
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
  /** Chunk size and the stalled-reader cut (send.ts), requests in flight (slots.ts), the page's caps (limits.ts). */
  send?: Partial<SendOptions>;
  slots?: Partial<SlotLimits>;
  limits?: PageLimits;
}

/** Seconds a refused client is told to wait. */
const RETRY_AFTER_S = 5;

export const STATIC_PATH = `${RUNS_PATH}/_static`;

/** No inline script or style anywhere; the page's own files only; forms post only here (sign-out); never framed. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'cache-control': 'private, no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * `/runs/<owner>/<repo>/<issue>[/<round>]`, and a round's raw data beside its page: `…/<round>/round.json`,
 * `…/<round>/patch.diff`, `…/<round>/step/<n>.json` (what a clipped text on the page links to).
 */
const PAGE_ROUTE =
  /^\/runs\/([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100})\/([1-9][0-9]{0,9})(?:\/([0-9]{1,6})(?:\/(round\.json|patch\.diff|step\/([1-9][0-9]{0,6})\.json))?)?\/?$/;

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

interface Serving {
  o: RunPagesOptions;
  slots: Slots;
  send: SendOptions;
}

/** Builds the /runs handler: true when it took the request (answering it asynchronously), false for other paths. */
export function createRunPagesHandler(o: RunPagesOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const serving: Serving = {
    o,
    slots: createSlots({ ...SLOT_DEFAULTS, ...o.slots }),
    send: { ...SEND_DEFAULTS, ...o.send },
  };
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path !== RUNS_PATH && !path.startsWith(`${RUNS_PATH}/`)) return false;
    // The one state change the pages have, sign-out, is a POST (the gate checks its origin).
    const signOut = req.method === 'POST' && o.gate !== undefined && path === o.gate.signOutPath;
    if (req.method !== 'GET' && req.method !== 'HEAD' && !signOut) {
      send(res, 405, 'text/plain; charset=utf-8', 'Method Not Allowed\n', { allow: 'GET, HEAD' });
      return true;
    }
    answer(serving, req, res, path).catch((err: unknown) => {
      o.log?.warn({ err: redact(err instanceof Error ? err.message : String(err)) }, 'run page failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'The run page could not be shown.\n');
      else res.destroy(); // a page cut short must not read as whole
    });
    return true;
  };
}

async function answer(s: Serving, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const o = s.o;
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
  // The raw routes pass the same check as the page: they hold the same data, unclipped.
  const user = o.gate ? await o.gate.allow(req, res, run) : undefined;
  if (user === null) return; // the gate answered
  const slot = s.slots.take(user ? `user:${user.login.toLowerCase()}` : `addr:${req.socket.remoteAddress ?? ''}`);
  if ('refused' in slot) {
    const text = slot.refused === 429 ? 'Too many run pages at once from you' : 'Too many run pages at once';
    return send(res, slot.refused, 'text/plain; charset=utf-8', `${text}; try again shortly.\n`, {
      'retry-after': String(RETRY_AFTER_S),
    });
  }
  // 'close' comes after the last byte, or when the reader left or was cut off: the slot lasts as long as the answer.
  res.once('close', slot.release);
  const round = m[4] === undefined ? undefined : Number(m[4]);
  const pieces =
    m[5] === undefined
      ? await pagePieces(s.o, run, round, user)
      : await rawPieces(s.o, { ...run, round: round! }, m[5], m[6] === undefined ? undefined : Number(m[6]));
  if (pieces === null) return sendNotFound(res);
  res.writeHead(200, { ...PAGE_HEADERS, 'content-type': pieces.type });
  if (req.method === 'HEAD') return void res.end();
  await sendChunks(res, pieces.body, s.send);
}

type Pieces = { type: string; body: Iterable<string> };

/** The page for a run's round (its latest when none is named), as pieces; null when there is no such run or round. */
async function pagePieces(
  o: RunPagesOptions,
  run: RunRef,
  round: number | undefined,
  user?: { login: string },
): Promise<Pieces | null> {
  const rounds = await o.source.listRounds(run);
  if (rounds.length === 0) return null;
  const wanted = round ?? rounds[rounds.length - 1]!.round;
  const stored = await o.source.getRound({ ...run, round: wanted });
  if (!stored) return null;
  const base = `${RUNS_PATH}/${encodeURIComponent(run.owner)}/${encodeURIComponent(run.repo)}/${run.issueNumber}`;
  const body = renderRunPageChunks({
    round: stored,
    rounds,
    roundHref: (n) => `${base}/${n}`,
    rawBase: `${base}/${wanted}`,
    staticBase: STATIC_PATH,
    githubUrl: o.githubUrl,
    user: user && o.gate ? { login: user.login, signOutHref: o.gate.signOutPath } : undefined,
    limits: o.limits,
  });
  return { type: 'text/html; charset=utf-8', body };
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A round's raw data, unclipped: the whole round, its patch, or one step with its timing facts. Written by an
 * iterative walk (util/boundedJson.ts), so no nesting depth in the stored data can overflow the stack.
 */
async function rawPieces(o: RunPagesOptions, ref: RoundRef, what: string, step?: number): Promise<Pieces | null> {
  const stored = await o.source.getRound(ref);
  if (!stored) return null;
  if (what === 'patch.diff') return { type: 'text/plain; charset=utf-8', body: [stored.patch] };
  if (what === 'round.json') return { type: JSON_TYPE, body: jsonPieces(stored, { maxDepth: Infinity }) };
  const t = stored.trajectory;
  if (step === undefined || step > t.steps.length) return null;
  // `step` in the stored step counts from 0; the page and this route count from 1.
  const value = { page_step: step, ...t.steps[step - 1], facts: stepFacts(t, step - 1) };
  return { type: JSON_TYPE, body: jsonPieces(value, { maxDepth: Infinity }) };
}
