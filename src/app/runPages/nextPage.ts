import { RUNS_PATH } from '../../runs/url.js';

/** The page a sign-in returns to when it names none, or names one that is not a run page. */
export const DEFAULT_NEXT = `${RUNS_PATH}/`;
const AUTH_PREFIX = `${RUNS_PATH}/_auth/`;
const ORIGIN = 'http://next.invalid';
const MAX_NEXT_CHARS = 2048;

/**
 * Where to go after signing in, as the browser will read it: `next` resolved as a URL against this app, so
 * dot segments (`/runs/./_auth/logout`), backslashes and encoded dots are resolved before the check, not after.
 * Only a run page of this app passes (never another site, never the sign-in's own paths); anything else gives
 * the runs index. `unsafe` when `next` holds a character a header cannot carry as is (controls, spaces,
 * non-ASCII such as U+202E): the caller refuses it rather than guess what was meant.
 */
export function nextPage(next: string | null | undefined): string | 'unsafe' {
  if (!next) return DEFAULT_NEXT;
  if (next.length > MAX_NEXT_CHARS || !/^[\x21-\x7e]+$/.test(next)) return 'unsafe';
  let url: URL;
  try {
    url = new URL(next, `${ORIGIN}/`);
  } catch {
    return DEFAULT_NEXT;
  }
  if (url.origin !== ORIGIN || url.username || url.password) return DEFAULT_NEXT;
  if (!url.pathname.startsWith(`${RUNS_PATH}/`) || decoded(url.pathname).startsWith(AUTH_PREFIX)) return DEFAULT_NEXT;
  return `${url.pathname}${url.search}`;
}

function decoded(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return AUTH_PREFIX; // undecodable: treat as the one kind of path that is never returned to
  }
}
