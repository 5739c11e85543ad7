import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed cookie values: base64url(JSON) + "." + base64url(HMAC-SHA256). The session holds only the GitHub login,
 * its session version (sessions.ts) and an expiry (never a token), so a stolen cookie lasts no longer than its
 * short life or the next sign-out, and reads nothing the permission check does not allow again on every page.
 */
export function signValue(secret: string, payload: Record<string, unknown>): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${mac(secret, body)}`;
}

/** The payload when the signature holds and `exp` (seconds) is in the future; null otherwise. */
export function verifyValue(
  secret: string,
  value: string | undefined,
  nowMs = Date.now(),
): Record<string, unknown> | null {
  if (!value) return null;
  const dot = value.indexOf('.');
  if (dot <= 0) return null;
  const body = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(mac(secret, body));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    return typeof payload.exp === 'number' && payload.exp * 1000 > nowMs ? payload : null;
  } catch {
    return null;
  }
}

function mac(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url');
}

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/** A Set-Cookie header: httpOnly and SameSite=Lax always, Secure when the app is served over https. */
export function setCookie(
  name: string,
  value: string,
  o: { path: string; maxAgeSec: number; secure: boolean },
): string {
  return [
    `${name}=${value}`,
    `Path=${o.path}`,
    `Max-Age=${o.maxAgeSec}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(o.secure ? ['Secure'] : []),
  ].join('; ');
}
