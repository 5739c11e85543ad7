/**
 * Scrubs secrets from text before it is logged, stored in a trajectory or posted to GitHub.
 * Known secret values are registered at runtime (installation tokens); patterns catch the rest.
 */
const registered = new Set<string>();

const PATTERNS: RegExp[] = [
  /gh[pousr]_[A-Za-z0-9]{20,255}/g, // GitHub tokens (ghs_ = installation tokens)
  /github_pat_[A-Za-z0-9_]{20,255}/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /(https?:\/\/)[^\s/:@]+:[^\s/@]+@/g, // credentials in URLs
  /\b(x-access-token|Bearer|token)\s+[A-Za-z0-9._-]{16,}/gi,
];

export const REDACTED = '[REDACTED]';

/** Remember a secret value so every later redact() call removes it. */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 8) registered.add(value);
}

export function forgetSecret(value: string): void {
  registered.delete(value);
}

export function redact(text: string): string {
  let out = text;
  for (const secret of registered) out = out.split(secret).join(REDACTED);
  for (const re of PATTERNS) {
    out = out.replace(re, (m, prefix: string | undefined) =>
      typeof prefix === 'string' && /^https?:\/\/$/.test(prefix) ? `${prefix}${REDACTED}@` : REDACTED,
    );
  }
  return out;
}

/** redis://:secret@host -> redis://:***@host (redact() only knows user:password@ forms). */
export function maskUrlPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return redact(u.toString());
  } catch {
    return redact(url).replace(/:[^:@/]*@/, ':***@');
  }
}
