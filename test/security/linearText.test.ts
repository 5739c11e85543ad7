import { describe, expect, test } from '@jest/globals';
import { defang, visibleText } from '../../src/github/untrusted.js';
import { redact, REDACTED } from '../../src/util/redact.js';
import { OLD_KEYWORD, oldRedact } from '../support/oldTextPatterns.js';

/**
 * Redaction and defanging run synchronously on model-written text of any size (issue #31): 16 MiB of input
 * built to make each pattern backtrack must take time linear in it. The code these replaced took minutes on
 * these inputs (a lazy PEM span: 19 s for 1 MiB; `\S*[#/]` after a closing keyword: 107 s for 512 KiB), so
 * the bound is generous for a loaded 2-core machine and still fails them. Each invisible mark defang() adds costs
 * about a microsecond more there (V8 builds the output a piece at a time), so the bound grows with the marks.
 */
const MIB16 = 16 * 1024 * 1024;
const BOUND_MS = 5000;
const MS_PER_MARK = 0.0025;

const fill = (unit: string, chars = MIB16) => unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);

function timed<T>(run: () => T): { out: T; ms: number } {
  const t0 = performance.now();
  const out = run();
  return { out, ms: performance.now() - t0 };
}

const KEY_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7';
const REAL_KEY = `-----BEGIN RSA PRIVATE KEY-----\n${KEY_BODY}\n-----END RSA PRIVATE KEY-----`;
const TOKEN = `ghp_${'a1B2'.repeat(9)}`;

describe('redact() in linear time on hostile input', () => {
  test.each([
    ['BEGIN lines without an END', '-----BEGIN PRIVATE KEY-----\n'],
    ['BEGIN lines, then END lines that are no key', '-----BEGIN PRIVATE KEY-----\n-----END AAAAAAAA\n'],
    ['BEGIN with long label runs', `-----BEGIN ${'A '.repeat(40)}PRIVATE KE\n`],
    ['END lines only', '-----END PRIVATE KEY-----\n'],
    ['token prefixes', 'ghp_github_pat_'],
    ['short token bodies', `ghp_${'a'.repeat(19)}-`],
    ['URL credentials without an @', 'https://user:pass:'],
    ['a keyword and whitespace before short words', 'token \t  Bearer x-access-token short '],
  ])('%s, with a real key and token embedded', (_what, unit) => {
    const half = fill(unit, MIB16 / 2);
    const { out, ms } = timed(() => redact(`${half}${REAL_KEY}\n${TOKEN}\n${half}`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(out).not.toContain(KEY_BODY);
    expect(out).not.toContain(TOKEN);
    expect(out).toContain(REDACTED);
  });

  test('a key after 16 MiB of unmatched BEGIN lines goes, and text before the first BEGIN stays', () => {
    const { out, ms } = timed(() => redact(`kept\n${fill('-----BEGIN EC PRIVATE KEY-----\nx\n')}${REAL_KEY}tail`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(out).toBe(`kept\n${REDACTED}tail`);
  });
});

describe('defang() in linear time on hostile input', () => {
  const LIVE = 'Fixes #12';
  test.each([
    ['keywords joined by colons (no reference anywhere)', 'fix:'],
    ['keywords before #', 'fix#'],
    ['a keyword, a colon, a run of emphasis', 'fix:******'],
    ['emphasised keywords before whitespace', 'Fixes ** '],
    ['keywords between spaces', 'resolved '],
    ['many @', '@'],
    ['many #', '#'],
    ['owner/repo paths before @', 'a/b.c-d_e/'],
    ['GH- without digits', 'GH-'],
  ])('%s, with a live reference and mention embedded', (_what, unit) => {
    const half = fill(unit, MIB16 / 2);
    const text = `${half} ${LIVE} @octocat o/r@0123abcd ${half}`;
    const { out, ms } = timed(() => defang(text));
    expect(ms).toBeLessThan(BOUND_MS + (out.length - text.length) * MS_PER_MARK);
    expect(out).toContain(` F\u2060ixes #\u200B12 @\u200Boctocat o/r@\u200B0123abcd `);
  });

  test('one keyword before 16 MiB with the reference at its end still counts', () => {
    const { out, ms } = timed(() => defang(`fix:${fill('*:x')}#1`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(out.startsWith('f\u2060ix:')).toBe(true);
  });
});

describe('visibleText() in linear time on hostile issue text', () => {
  // Issue bodies are at most 64 KiB, where unclosed `<!--` mid-line took 6 s; 1 MiB would have taken half an hour.
  test('a real comment, then a line of unclosed comment openings', () => {
    const line = fill('x<!--', 2 ** 20);
    const { out, ms } = timed(() => visibleText(`keep<!-- hidden -->${line}`));
    expect(ms).toBeLessThan(BOUND_MS);
    expect(out).toBe(`keep${line}`);
  });
});

const oldKeywordsOnly = (text: string) => text.replace(OLD_KEYWORD, '$1\u2060');

/** Deterministic pseudo-random strings made of the pieces each pattern looks for. */
function* samples(pieces: readonly string[], count: number, seed: number): Generator<string> {
  let s = seed;
  const next = (n: number) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
  for (let i = 0; i < count; i++) {
    let text = '';
    for (let n = next(24); n > 0; n--) text += pieces[next(pieces.length)];
    yield text;
  }
}

describe('same output as the old patterns', () => {
  test('redact() on strings of key markers, tokens, URLs and keywords', () => {
    const pieces = ['-----BEGIN ', '-----END ', 'PRIVATE KEY-----', 'RSA ', 'PRIVATE KEY', '-----', '\n', ' ', 'A'];
    const more = ['x', 'ghp_', 'abcdefghij', '0123456789', 'github_pat_', '_', 'https://', 'u:', 'p@', ':', '/'];
    const words = ['token ', 'Bearer\t', 'x-access-token ', 'TOKEN ', '.', '-', 'é'];
    for (const text of samples([...pieces, ...more, ...words], 20000, 1)) expect(redact(text)).toBe(oldRedact(text));
    let keys = 0;
    for (const text of samples(pieces, 20000, 2)) {
      expect(redact(text)).toBe(oldRedact(text));
      if (text !== redact(text)) keys++;
    }
    expect(keys).toBeGreaterThan(100);
  });

  test('defang() breaks the same closing keywords', () => {
    const pieces = ['fix', 'Closes', 'resolved', 'RESOLVE', 'ſ', 'x', 'é', '#', '/', ':', '*', '_', '`', ' '];
    const more = ['\n', '\t', '\u00A0', '\u2028', 'GH-', 'gh-', '1', 'o/r#3', 'https://h/o/r/pull/1'];
    let broken = 0;
    for (const text of samples([...pieces, ...more], 40000, 3)) {
      const expected = oldKeywordsOnly(text);
      // Only the zero-width spaces after # and GH- come from the other steps.
      expect(defang(text).replace(/\u200B/g, '')).toBe(expected);
      if (expected !== text) broken++;
    }
    expect(broken).toBeGreaterThan(1000);
  });
});
