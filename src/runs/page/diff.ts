import { escapeHtml } from './html.js';

/** Above this many line pairs, an edit shows as all-removed then all-added (the LCS table would cost too much). */
const MAX_LCS_CELLS = 400_000;

type DiffLine = { op: ' ' | '-' | '+'; text: string };

/** Line diff of an Edit's old_string -> new_string, by longest common subsequence. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length * b.length > MAX_LCS_CELLS) {
    return [...a.map((text) => ({ op: '-' as const, text })), ...b.map((text) => ({ op: '+' as const, text }))];
  }
  // lengths[i][j] = LCS of a[i..] and b[j..], one flat array.
  const w = b.length + 1;
  const lengths = new Uint32Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i * w + j] =
        a[i] === b[j]
          ? lengths[(i + 1) * w + j + 1]! + 1
          : Math.max(lengths[(i + 1) * w + j]!, lengths[i * w + j + 1]!);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) (out.push({ op: ' ', text: a[i++]! }), j++);
    else if (lengths[(i + 1) * w + j]! >= lengths[i * w + j + 1]!) out.push({ op: '-', text: a[i++]! });
    else out.push({ op: '+', text: b[j++]! });
  }
  while (i < a.length) out.push({ op: '-', text: a[i++]! });
  while (j < b.length) out.push({ op: '+', text: b[j++]! });
  return out;
}

export function renderDiffLines(lines: DiffLine[]): string {
  // Block spans, one per line: a newline between them would show as an empty line in the <pre>.
  return lines.map((l) => `<span class="${CLASS[l.op]}">${l.op}${escapeHtml(l.text)}</span>`).join('');
}

const CLASS = { ' ': 'ctx', '-': 'del', '+': 'add' } as const;

/** A git patch with its lines coloured: file headers, hunks, removals, additions. */
export function renderPatch(patch: string): string {
  return patch
    .split('\n')
    .map((line) => {
      const cls = /^(diff |index |--- |\+\+\+ )/.test(line)
        ? 'hdr'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : 'ctx';
      return `<span class="${cls}">${escapeHtml(line) || ' '}</span>`;
    })
    .join('');
}
