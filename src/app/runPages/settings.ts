import { readSetting } from '../../util/settings.js';
import { createHmac } from 'node:crypto';
import type { BlockList } from 'node:net';
import { publicUrlFromEnv } from '../../runs/url.js';
import { parseTrustedProxies } from './origin.js';
import { SESSION_SECRET_ADVICE, weakSecretReason } from './sessionSecret.js';

/** A run-page setting the app must not start with; its message is one line that names the variable. */
export class RunPagesSettingsError extends Error {
  override name = 'RunPagesSettingsError';
}

export interface RunPagesSettings {
  clientId: string;
  clientSecret: string;
  sessionSecret: string;
  publicUrl?: string;
  trustedProxies?: BlockList;
  /** GitHub Enterprise Server's web address: GHE_PROTOCOL (default https) and GHE_HOST, as Probot builds its own. */
  ghesUrl?: string;
}

/** The pages' settings, or why they are off; throws RunPagesSettingsError for a setting that is wrong. */
export type RunPagesSetup = { on: RunPagesSettings } | { off: string };

/**
 * Reads and checks the run pages' settings (docs/trajectory-pages.md). Called before the app starts serving, so a
 * weak FROGNANO_SESSION_SECRET stops the start-up instead of signing forgeable cookies.
 */
export function runPagesSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): RunPagesSetup {
  const ownSecret = env.FROGNANO_SESSION_SECRET?.trim();
  const ownWeakness = ownSecret ? weakSecretReason(ownSecret) : null;
  if (ownWeakness)
    throw new RunPagesSettingsError(
      `FROGNANO_SESSION_SECRET is too weak to sign run-page sessions (${ownWeakness}): ${SESSION_SECRET_ADVICE}`,
    );
  const proxiesRaw = env.FROGNANO_TRUSTED_PROXIES?.trim();
  let trustedProxies: BlockList | undefined;
  try {
    trustedProxies = proxiesRaw ? parseTrustedProxies(proxiesRaw) : undefined;
  } catch (err) {
    throw new RunPagesSettingsError(`FROGNANO_TRUSTED_PROXIES: ${(err as Error).message}`);
  }
  let publicUrl: string | undefined;
  try {
    publicUrl = publicUrlFromEnv(env);
  } catch (err) {
    throw new RunPagesSettingsError(`FROGNANO_PUBLIC_URL is not a URL: ${(err as Error).message}`);
  }
  const clientId = env.GITHUB_CLIENT_ID?.trim();
  const clientSecret = env.GITHUB_CLIENT_SECRET?.trim();
  if (!clientId || !clientSecret)
    return {
      off: "run pages are off: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (the App's OAuth credentials) to serve /runs",
    };
  if (!publicUrl && !trustedProxies)
    return {
      off: 'run pages are off: set FROGNANO_PUBLIC_URL (or, behind a reverse proxy that sets Host and X-Forwarded-Proto, FROGNANO_TRUSTED_PROXIES) so sign-in knows its own address',
    };
  return {
    on: {
      clientId,
      clientSecret,
      sessionSecret: ownSecret ?? derivedSessionSecret(clientSecret),
      publicUrl,
      trustedProxies,
      ghesUrl: ghesUrlFromEnv(env),
    },
  };
}

/** `http://ghe.local` for GHE_HOST=ghe.local GHE_PROTOCOL=http; undefined without GHE_HOST (github.com). */
export function ghesUrlFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  const host = env.GHE_HOST?.trim();
  if (!host) return undefined;
  return `${readSetting(env, 'GHE_PROTOCOL') ?? 'https'}://${host}`;
}

/** Without a secret of its own, one derived from the client secret, which must then be strong itself. */
function derivedSessionSecret(clientSecret: string): string {
  const weakness = weakSecretReason(clientSecret);
  if (weakness)
    throw new RunPagesSettingsError(
      `FROGNANO_SESSION_SECRET is not set and GITHUB_CLIENT_SECRET is too weak to derive it from (${weakness}): set FROGNANO_SESSION_SECRET; ${SESSION_SECRET_ADVICE}`,
    );
  return createHmac('sha256', clientSecret).update('frognano run-page sessions').digest('hex');
}
