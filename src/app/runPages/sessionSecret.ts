/**
 * The key that signs the run pages' cookies must not be guessable: with a weak one, anyone who holds one signed
 * cookie (their own) finds the key offline and forges a session for any login. A key is accepted when it is at
 * least 32 bytes long, estimates at 90 bits or more, and is not a repeated or sequential run or a placeholder.
 * A random key (`openssl rand -hex 32`) always passes.
 */
export const MIN_SECRET_BYTES = 32;
const MIN_ESTIMATED_BITS = 90;
/** Words that mark a hand-made or placeholder key (a random key contains one with negligible odds). */
const WEAK_WORDS = ['password', 'secret', 'changeme', 'replace', 'example', 'frognano', 'session'];

export const SESSION_SECRET_ADVICE = `use at least ${MIN_SECRET_BYTES} random bytes, e.g. \`openssl rand -hex 32\``;

/** Why `secret` is too weak to sign sessions with; null when it is fine. */
export function weakSecretReason(secret: string): string | null {
  const bytes = Buffer.byteLength(secret);
  if (bytes < MIN_SECRET_BYTES) return `it is ${bytes} bytes long`;
  const lower = secret.toLowerCase();
  const word = WEAK_WORDS.find((w) => lower.includes(w));
  if (word) return `it contains the word "${word}"`;
  if (repeatedShare(secret) > 0.25) return 'it repeats itself';
  if (sequentialShare(secret) > 0.6) return 'it is mostly a run of neighbouring characters';
  if (estimatedBits(secret) < MIN_ESTIMATED_BITS) return 'it uses too few different characters';
  return null;
}

/** Length times the Shannon entropy of its characters: an upper bound on what a text of that make-up carries. */
function estimatedBits(text: string): number {
  const chars = [...text];
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / chars.length) * Math.log2(n / chars.length);
  return perChar * chars.length;
}

/** The share of its 4-character windows seen before (a repeated word or pattern scores high, random text ~0). */
function repeatedShare(text: string): number {
  const seen = new Set<string>();
  let repeats = 0;
  const windows = text.length - 3;
  for (let i = 0; i < windows; i++) {
    const w = text.slice(i, i + 4);
    if (seen.has(w)) repeats++;
    seen.add(w);
  }
  return windows > 0 ? repeats / windows : 0;
}

/** The share of neighbouring characters one code point apart or equal (`abcdef`, `123456`, `aaaa`). */
function sequentialShare(text: string): number {
  let steps = 0;
  for (let i = 1; i < text.length; i++) if (Math.abs(text.charCodeAt(i) - text.charCodeAt(i - 1)) <= 1) steps++;
  return text.length > 1 ? steps / (text.length - 1) : 0;
}
