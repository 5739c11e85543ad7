import { clipLines, clipNote, moreLinesText, shownLine, type LineCaps, type Marks } from './clipText.js';
import { hasInvisible } from './html.js';

/** Above this many line pairs, an edit shows as all-removed then all-added (the LCS table would cost too much). */
const MAX_LCS_CELLS = 400_000;

export type DiffLine = { op: ' ' | '-' | '+'; text: string };

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

/** Diff lines as block spans, until the rendered bytes pass `maxBytes`; `shown` says how many made it. */
export function renderDiffLines(
  lines: DiffLine[],
  o: { maxBytes?: number; lineChars?: number; marks?: Marks } = {},
): { html: string; shown: number } {
  const parts: string[] = [];
  let bytes = 0;
  for (const l of lines) {
    const text = l.text.slice(0, o.lineChars ?? Infinity);
    // Block spans, one per line: a newline between them would show as an empty line in the <pre>.
    const html = `<span class="${CLASS[l.op]}">${l.op}${shownLine(text, l.text.length - text.length)}</span>`;
    if (parts.length > 0 && bytes + html.length > (o.maxBytes ?? Infinity)) break;
    if (o.marks && !o.marks.invisible && hasInvisible(text)) o.marks.invisible = true;
    parts.push(html);
    bytes += html.length;
  }
  return { html: parts.join(''), shown: parts.length };
}

const CLASS = { ' ': 'ctx', '-': 'del', '+': 'add' } as const;

const BIDI_HUNK =
  '<span class="bidi-warn">⚠ This hunk contains bidirectional or invisible Unicode characters, shown as ⟨U+…⟩ below: the code may read differently from how it runs.</span>';

function patchClass(line: string): string {
  return /^(diff |index |--- |\+\+\+ )/.test(line)
    ? 'hdr'
    : line.startsWith('@@')
      ? 'hunk'
      : line.startsWith('+')
        ? 'add'
        : line.startsWith('-')
          ? 'del'
          : 'ctx';
}

/**
 * A git patch with its lines coloured (file headers, hunks, removals, additions), clipped to `caps` with a link to
 * the whole patch; a hunk holding invisible or bidirectional characters gets GitHub's kind of warning above it.
 */
export function renderPatch(patch: string, o: { caps?: LineCaps; rawHref?: string } = {}): string {
  const caps = o.caps ?? { maxLines: Infinity, maxBytes: Infinity, lineChars: Infinity };
  const lines: { cls: string; html: string; invisible: boolean }[] = [];
  const c = clipLines(patch, caps, (line, cut) => {
    const cls = patchClass(line);
    const html = `<span class="${cls}">${shownLine(line, cut) || ' '}</span>`;
    lines.push({ cls, html, invisible: hasInvisible(line) });
    return html;
  });
  lines.length = c.html.length; // the line past the byte cap was rendered, not shown
  const out: string[] = [];
  for (let start = 0; start < lines.length;) {
    let end = start + 1;
    while (end < lines.length && !startsHunk(lines[end]!)) end++;
    const hunk = lines.slice(start, end);
    if (hunk.some((l) => l.invisible)) out.push(BIDI_HUNK);
    for (const l of hunk) out.push(l.html);
    start = end;
  }
  if (c.moreLines > 0 && o.rawHref) out.push(clipNote(moreLinesText(c.moreLines), o.rawHref, 'whole patch'));
  return out.join('');
}

function startsHunk(l: { cls: string; html: string }): boolean {
  return l.cls === 'hunk' || (l.cls === 'hdr' && l.html.startsWith('<span class="hdr">diff '));
}
