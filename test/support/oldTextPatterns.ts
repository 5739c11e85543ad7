import { REDACTED } from '../../src/util/redact.js';

/**
 * The redaction and closing-keyword patterns as they were before issue #31 (super-linear on hostile input): the
 * reference the linear code is held to (test/security/linearText.test.ts) and timed against (bench/redaction.ts).
 */
export const OLD_REDACT = [
  /gh[pousr]_[A-Za-z0-9]{20,255}/g,
  /github_pat_[A-Za-z0-9_]{20,255}/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /(https?:\/\/)[^\s/:@]+:[^\s/@]+@/g,
  /\b(x-access-token|Bearer|token)\s+[A-Za-z0-9._-]{16,}/gi,
];
export const oldRedact = (text: string) =>
  OLD_REDACT.reduce(
    (out, re) =>
      out.replace(re, (_m, prefix: string | undefined) =>
        typeof prefix === 'string' && /^https?:\/\/$/.test(prefix) ? `${prefix}${REDACTED}@` : REDACTED,
      ),
    text,
  );
export const OLD_KEYWORD = new RegExp(
  String.raw`(?<![\p{L}\p{N}])([cfr])(?=(?:lose[sd]?|ix(?:e[sd])?|esolve[sd]?)(?![\p{L}\p{N}])` +
    String.raw`[*_~\x60]*(?::[*_~\x60]*\s*|\s+|(?=#))(?:\S*[#/]|GH-\d))`,
  'giu',
);
