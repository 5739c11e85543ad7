/**
 * Time per MiB of redact() and defang() on the inputs that made the old patterns super-linear (issue #31), beside
 * the old patterns (kept here) on the same inputs. The old ones run only on small inputs: they take minutes from
 * 1 MiB up, and their ms/MiB growing with the size is the point. Medians of `runs` runs for the new code.
 *   npx tsx bench/redaction.ts [runs=3] [oldMaxKiB=256]
 */
import { defang } from '../src/github/untrusted.js';
import { redact } from '../src/util/redact.js';
import { OLD_KEYWORD, oldRedact } from '../test/support/oldTextPatterns.js';
import { summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 3);
const oldMaxKiB = Number(process.argv[3] ?? 256);

const INVISIBLE =
  /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/g;
const Z = '\u200B';
const oldDefang = (text: string) =>
  text
    .replace(INVISIBLE, '')
    .replace(OLD_KEYWORD, '$1\u2060')
    .replace(/(^|[^A-Za-z0-9])@(?=[A-Za-z0-9])/g, `$1@${Z}`)
    .replace(/([A-Za-z0-9_.-]\/[A-Za-z0-9_.-]+)@(?=[0-9a-f]{7})/gi, `$1@${Z}`)
    .replace(/#(?=\d)/g, `#${Z}`)
    .replace(/\b(GH)-(?=\d)/gi, `$1-${Z}`)
    .replace(/<!--/g, `<${Z}!--`)
    .replace(/-->/g, `--${Z}>`);

const fill = (unit: string, chars: number) => unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
const PROSE = 'Fixed the parser: see src/a.ts and https://example.com/x (token count 12). ';

const CASES: { name: string; now: (s: string) => string; old: (s: string) => string; input: (n: number) => string }[] =
  [
    { name: 'redact: prose (baseline)', now: redact, old: oldRedact, input: (n) => fill(PROSE, n) },
    {
      name: 'redact: BEGIN lines, no END',
      now: redact,
      old: oldRedact,
      input: (n) => fill('-----BEGIN PRIVATE KEY-----\n', n),
    },
    {
      name: 'redact: BEGIN + non-key END',
      now: redact,
      old: oldRedact,
      input: (n) => fill('-----BEGIN PRIVATE KEY-----\n-----END AAAAAAAA\n', n),
    },
    { name: 'defang: prose (baseline)', now: defang, old: oldDefang, input: (n) => fill(PROSE, n) },
    { name: 'defang: fix:fix:fix:...', now: defang, old: oldDefang, input: (n) => fill('fix:', n) },
    { name: 'defang: fix#fix#fix#...', now: defang, old: oldDefang, input: (n) => fill('fix#', n) },
    { name: 'defang: fix: then ******', now: defang, old: oldDefang, input: (n) => `fix:${fill('*', n - 4)}` },
  ];

function msPerMiB(run: (s: string) => string, text: string, times: number): number {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    run(text);
    ms.push(performance.now() - t0);
  }
  return summarize(ms).median / (text.length / 2 ** 20);
}

const KIB = [64, 256, 1024, 16 * 1024];
console.log(`ms per MiB (characters), new: median of ${runs}; old: one run, only up to ${oldMaxKiB} KiB`);
console.log(
  `${'case'.padEnd(30)} ${KIB.map((k) => `${k >= 1024 ? `${k / 1024} MiB` : `${k} KiB`}`.padStart(18)).join('')}`,
);
for (const c of CASES) {
  // One small run first, so the first cell does not carry the regular expressions' compilation.
  c.now(c.input(4096));
  c.old(c.input(4096));
  const cells = KIB.map((k) => {
    const text = c.input(k * 1024);
    const now = msPerMiB(c.now, text, runs).toFixed(0);
    const old = k <= oldMaxKiB ? msPerMiB(c.old, text, 1).toFixed(0) : '-';
    return `${old}/${now}`.padStart(18);
  });
  console.log(`${c.name.padEnd(30)} ${cells.join('')}`);
}
console.log('cells: old/new');
