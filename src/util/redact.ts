/**
 * Scrubs secrets from text before it is logged, stored in a trajectory or posted to GitHub.
 * Known secret values are registered at runtime (installation tokens); patterns catch the rest.
 *
 * Everything here runs synchronously on model-written text of any size, so every step is linear in it: no
 * pattern may rescan the rest of the text from each of many starting points (a lazy span across lines did:
 * 19 s for 1 MiB of BEGIN lines without an END). Each pattern's quantifiers stop at a character the next
 * part cannot start with, and private keys are found by a scan instead of a regex.
 */
const registered = new Set<string>();

const PATTERNS: RegExp[] = [
  /gh[pousr]_[A-Za-z0-9]{20,255}/g, // GitHub tokens (ghs_ = installation tokens)
  /github_pat_[A-Za-z0-9_]{20,255}/g,
];

const LATE_PATTERNS: RegExp[] = [
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
  for (const re of PATTERNS) out = out.replace(re, REDACTED);
  out = redactPrivateKeys(out);
  for (const re of LATE_PATTERNS) {
    out = out.replace(re, (m, prefix: string | undefined) =>
      typeof prefix === 'string' && /^https?:\/\/$/.test(prefix) ? `${prefix}${REDACTED}@` : REDACTED,
    );
  }
  return out;
}

const BEGIN = '-----BEGIN ';
const END = '-----END ';
const KEY_TAIL = 'PRIVATE KEY-----';

/**
 * Where a `[A-Z ]*PRIVATE KEY-----` starting at `at` ends, or -1. `-` is not in `[A-Z ]`, so the words must run
 * up to exactly the `-----`: one forward look at the run, where a regex would back off it one letter at a time.
 */
function keyLabelEnd(text: string, at: number): number {
  let i = at;
  for (let c = text.charCodeAt(i); c === 32 || (c >= 65 && c <= 90); c = text.charCodeAt(++i));
  const words = i - (KEY_TAIL.length - 5);
  return words >= at && text.startsWith(KEY_TAIL, words) ? i + 5 : -1;
}

/**
 * Replaces each `-----BEGIN [A-Z ]*PRIVATE KEY-----` ... `-----END [A-Z ]*PRIVATE KEY-----` block (the first END
 * after its BEGIN) with REDACTED: the same blocks as the lazy regex it replaces, in one pass. A BEGIN with no END
 * after it means no later BEGIN has one either, so the scan stops there instead of searching again from each.
 */
function redactPrivateKeys(text: string): string {
  let out = '';
  let kept = 0;
  let from = 0;
  for (;;) {
    const begin = text.indexOf(BEGIN, from);
    if (begin < 0) break;
    const body = keyLabelEnd(text, begin + BEGIN.length);
    if (body < 0) {
      from = begin + 1;
      continue;
    }
    const end = closingEnd(text, body);
    if (end < 0) break;
    out += text.slice(kept, begin) + REDACTED;
    kept = from = end;
  }
  return kept === 0 ? text : out + text.slice(kept);
}

/** End of the first `-----END [A-Z ]*PRIVATE KEY-----` at or after `from`, or -1. */
function closingEnd(text: string, from: number): number {
  for (let at = text.indexOf(END, from); at >= 0; at = text.indexOf(END, at + 1)) {
    const end = keyLabelEnd(text, at + END.length);
    if (end >= 0) return end;
  }
  return -1;
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
