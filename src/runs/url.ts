import type { RunRef } from './record.js';

/** The path every run page lives under, on the app (and on `frognano view`). */
export const RUNS_PATH = '/runs';

/** The app's public base URL (FROGNANO_PUBLIC_URL, e.g. https://frognano.example.org); undefined when unset. */
export function publicUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const raw = env.FROGNANO_PUBLIC_URL?.trim();
  if (!raw) return undefined;
  const u = new URL(raw);
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new Error(`FROGNANO_PUBLIC_URL must be http(s), got ${raw}`);
  return raw.replace(/\/+$/, '');
}

/** The page of a run (`…/runs/owner/repo/12`), or of one of its rounds (`…/runs/owner/repo/12/2`). */
export function runPageUrl(baseUrl: string, ref: RunRef & { round?: number }): string {
  const parts = [ref.owner, ref.repo, String(ref.issueNumber), ...(ref.round === undefined ? [] : [String(ref.round)])];
  return `${baseUrl.replace(/\/+$/, '')}${RUNS_PATH}/${parts.map(encodeURIComponent).join('/')}`;
}
