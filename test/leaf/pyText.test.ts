import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pyDedent, pyStrip } from '../../src/leaf/pyText.js';

/**
 * The TS ports of textwrap.dedent and str.strip against python3 itself, on many generated texts: margins of
 * spaces and tabs that agree or not, whitespace-only lines, CRLF and lone CR, Unicode spaces JS trims differently.
 */
const script = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'task-message', 'py_text.py');

interface PyOutput {
  dedent: string[];
  strip: string[];
  statement: string[];
}

function python(inputs: string[]): PyOutput {
  return JSON.parse(execFileSync('python3', [script], { input: JSON.stringify(inputs), encoding: 'utf8' })) as PyOutput;
}

/** mulberry32: a seeded generator, so a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MARGINS = ['', ' ', '  ', '    ', '\t', '\t ', ' \t', '  \t', '\t\t'];
const WORDS = ['x', 'def f():', 'a b', '```', '# h', 'é', '\u00a0x', 'x\u00a0', '\ufeffx', 'x\ufeff', '\u3000', '\x0c'];
const ENDS = ['', ' ', '\t', '\r', ' \r', '\u2028', '\x85', '\x1c', '\x0b', '\u00a0', '\u200b'];

/** Line by line: a margin, maybe a word, maybe trailing whitespace; lines joined by \n (sometimes \r\n). */
function generate(next: () => number, lines: number): string {
  const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)]!;
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const word = next() < 0.2 ? '' : pick(WORDS);
    out.push(`${pick(MARGINS)}${word}${next() < 0.5 ? '' : pick(ENDS)}`);
  }
  return out.join(next() < 0.3 ? '\r\n' : '\n');
}

describe('pyDedent and pyStrip', () => {
  it('agree with python3 on 4,000 generated texts', () => {
    const next = random(19);
    const inputs = Array.from({ length: 4_000 }, (_, i) => generate(next, 1 + (i % 9)));
    const expected = python(inputs);
    const mismatches = inputs.filter((s, i) => pyDedent(s) !== expected.dedent[i] || pyStrip(s) !== expected.strip[i]);
    expect(mismatches.slice(0, 5)).toEqual([]);
    expect(inputs.map((s) => `${pyStrip(pyDedent(s))}\n`)).toEqual(expected.statement);
  });

  it('agree with python3 on the hand-picked cases', () => {
    const inputs = [
      '',
      '\n',
      '    a\n      b\n    c',
      '\ta\n        b',
      '  a\n\t b',
      '  a\n   \n  b',
      '  a\r\n\r\n  b\r\n',
      '  a\r\n  \r\n  b',
      '\u2028  a',
      '  a\u2028  b',
      '\ufeff title \ufeff',
      '\x1c\x85 x \x1f',
    ];
    const expected = python(inputs);
    expect(inputs.map(pyDedent)).toEqual(expected.dedent);
    expect(inputs.map(pyStrip)).toEqual(expected.strip);
  });
});
