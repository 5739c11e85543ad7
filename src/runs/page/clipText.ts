import { escapeHtml, escapeShown, formatCount, hasInvisible } from './html.js';

/**
 * Long texts on the page, cut by lines and by rendered bytes without ever splitting the whole text: a stored text
 * may be 16 MiB of newlines, and `split('\n')` on it alone costs more than the page may.
 */
export interface LineCaps {
  maxLines: number;
  /** Rendered bytes (UTF-16 units, close enough: the page's own cap is checked in bytes). */
  maxBytes: number;
  /** Characters of any one line. */
  lineChars: number;
}

export interface ClippedLines {
  /** One rendered string per line shown. */
  html: string[];
  /** Lines left out (the text has shown + moreLines lines). */
  moreLines: number;
  /** A shown line held an invisible or bidirectional character. */
  invisible: boolean;
  /** The first shown line with text in it (for a fold's summary). */
  firstText: string;
}

/** Found while rendering one step (or the patch): it gets a warning banner, and its raw JSON is linked. */
export interface Marks {
  invisible: boolean;
}

/** Lines after `from`: one more than the newlines there (a loop over indexOf, no array). */
function linesFrom(text: string, from: number): number {
  if (from > text.length) return 0;
  let n = 1;
  for (let i = text.indexOf('\n', from); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Renders the text's first lines with `render(line, cutChars)` until a cap is reached; counts the rest. */
export function clipLines(
  text: string,
  caps: LineCaps,
  render: (line: string, cutChars: number) => string,
): ClippedLines {
  const out: ClippedLines = { html: [], moreLines: 0, invisible: false, firstText: '' };
  let pos = 0;
  let bytes = 0;
  while (pos <= text.length && out.html.length < caps.maxLines) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = text.length;
    const line = text.slice(pos, pos + Math.min(end - pos, caps.lineChars));
    const html = render(line, end - pos - line.length);
    // The first line always shows: one line is bounded by lineChars.
    if (out.html.length > 0 && bytes + html.length > caps.maxBytes) break;
    out.html.push(html);
    bytes += html.length;
    if (!out.invisible && hasInvisible(line)) out.invisible = true;
    if (!out.firstText && line.trim()) out.firstText = line;
    pos = end + 1;
  }
  out.moreLines = linesFrom(text, pos);
  return out;
}

/** The first `maxLines` lines of the text (for an Edit's diff, which needs plain text on both sides). */
export function headLines(text: string, maxLines: number): { head: string; moreLines: number } {
  let end = -1;
  for (let n = 0; n < maxLines; n++) {
    end = text.indexOf('\n', end + 1);
    if (end < 0) return { head: text, moreLines: 0 };
  }
  return { head: text.slice(0, end), moreLines: linesFrom(text, end + 1) };
}

/** `… 2,699,000 more lines · raw JSON`: what a clip left out, and where all of it is. */
export function clipNote(what: string, rawHref: string, rawText = 'raw JSON'): string {
  return `<span class="clip">… ${what} · <a href="${rawHref}">${escapeHtml(rawText)}</a></span>`;
}

export function moreLinesText(n: number): string {
  return `${formatCount(n)} more line${n === 1 ? '' : 's'}`;
}

/** One line's text, escaped with invisible characters shown, and a mark where the line was cut. */
export function shownLine(line: string, cutChars: number): string {
  return cutChars > 0
    ? `${escapeShown(line)}<span class="clip"> … ${formatCount(cutChars)} more characters</span>`
    : escapeShown(line);
}

/**
 * Text in a <pre>, clipped (`clipNote` at the end), folded into <details> when long with its first line as the
 * summary, unless `fold` is false.
 */
export function clippedPre(
  text: string,
  o: {
    label: string;
    cls?: string;
    caps: LineCaps;
    rawHref: string;
    marks?: Marks;
    fold?: boolean;
    foldLines?: number;
  },
): string {
  const c = clipLines(text, o.caps, shownLine);
  if (c.invisible && o.marks) o.marks.invisible = true;
  const note = c.moreLines > 0 ? `\n${clipNote(moreLinesText(c.moreLines), o.rawHref)}` : '';
  const pre = `<pre class="${o.cls ?? 'out'}">${c.html.join('\n')}${note}</pre>`;
  const total = c.html.length + c.moreLines;
  if (o.fold === false || (total <= (o.foldLines ?? 30) && text.length <= 3000)) return pre;
  const first = escapeHtml(c.firstText.slice(0, 120));
  return `<details class="fold"><summary>${escapeHtml(o.label)} · ${formatCount(total)} lines · <code>${first}</code></summary>${pre}</details>`;
}
