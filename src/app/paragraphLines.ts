/**
 * The lines of a Markdown comment where a command can start: lines of top-level paragraphs, read by
 * CommonMark's block rules (https://spec.commonmark.org/0.31.2/). Fenced and indented code, HTML blocks and
 * comments, block quotes (with their lazy continuation lines), list items, headings and code spans or
 * inline HTML that run across lines never yield a line. Where an exact reading would need a full parser,
 * the scanner leans towards "not a command": a missed command can be typed again, an acted-on quote cannot be
 * taken back.
 */

interface Line {
  /** Columns of leading whitespace (tabs to the next multiple of 4). */
  indent: number;
  /** The line without its leading whitespace. */
  rest: string;
}

type Container = { kind: 'quote' } | { kind: 'list'; contentIndent: number };

const HTML_BLOCK_TAGS =
  'address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul';
const HTML_TYPE6 = new RegExp(`^</?(?:${HTML_BLOCK_TAGS})(?:\\s|/?>|$)`, 'i');
const HTML_TYPE7 =
  /^(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*\s*\/?>|<\/[A-Za-z][A-Za-z0-9-]*\s*>)\s*$/;
const FENCE_OPEN = /^(`{3,})[^`]*$|^(~{3,})/;
const THEMATIC_BREAK = /^(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const ATX_HEADING = /^#{1,6}(?:[ \t]|$)/;
const LIST_MARKER = /^([-+*]|\d{1,9}[.)])([ \t]+|$)/;

function measure(raw: string): Line {
  let col = 0;
  let i = 0;
  for (; i < raw.length; i++) {
    if (raw[i] === ' ') col++;
    else if (raw[i] === '\t') col += 4 - (col % 4);
    else break;
  }
  return { indent: col, rest: raw.slice(i) };
}

/** An HTML block's end condition when `rest` starts one (types 1-6 of the spec; 7 only outside paragraphs). */
function htmlBlockEnd(rest: string, inParagraph: boolean): RegExp | 'blank' | null {
  if (/^<(?:pre|script|style|textarea)(?:\s|>|$)/i.test(rest)) return /<\/(?:pre|script|style|textarea)>/i;
  if (rest.startsWith('<!--')) return /-->/;
  if (rest.startsWith('<?')) return /\?>/;
  if (/^<![A-Za-z]/.test(rest)) return />/;
  if (rest.startsWith('<![CDATA[')) return /\]\]>/;
  if (HTML_TYPE6.test(rest)) return 'blank';
  if (!inParagraph && HTML_TYPE7.test(rest)) return 'blank';
  return null;
}

/** True when the block that `rest` opens ends on the same line (`<!-- x -->`, `<pre>x</pre>`). */
function endsOnSameLine(rest: string, end: RegExp): boolean {
  if (rest.startsWith('<!--')) return rest.startsWith('<!-->') || rest.startsWith('<!--->') || end.test(rest.slice(4));
  return end.test(rest.slice(1));
}

/** Lines that start a block of their own, so they cannot be the lazy continuation of a quoted or listed paragraph. */
function startsBlock(l: Line): boolean {
  if (l.indent > 3) return false;
  return (
    FENCE_OPEN.test(l.rest) ||
    ATX_HEADING.test(l.rest) ||
    THEMATIC_BREAK.test(l.rest) ||
    l.rest.startsWith('>') ||
    LIST_MARKER.test(l.rest) ||
    htmlBlockEnd(l.rest, true) !== null
  );
}

/** Whether content of a container line (quote or list item) is paragraph text a lazy line could continue. */
function isParagraphText(l: Line): boolean {
  return l.rest !== '' && l.indent < 4 && !startsBlock(l);
}

/**
 * Character ranges of a paragraph's text that are code spans, HTML comments or inline HTML tags, found left to
 * right as CommonMark does (a code span's backticks win over a `<` inside it, and the other way round).
 */
function hiddenRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '`') {
      let n = 0;
      while (text[i + n] === '`') n++;
      const close = findBacktickRun(text, i + n, n);
      if (close >= 0) {
        ranges.push([i, close + n]);
        i = close + n;
      } else i += n;
      continue;
    }
    if (c === '<') {
      const end = inlineHtmlEnd(text, i);
      if (end > i) {
        ranges.push([i, end]);
        i = end;
        continue;
      }
    }
    i++;
  }
  return ranges;
}

function findBacktickRun(text: string, from: number, n: number): number {
  for (let j = from; j < text.length;) {
    if (text[j] !== '`') {
      j++;
      continue;
    }
    let m = 0;
    while (text[j + m] === '`') m++;
    if (m === n) return j;
    j += m;
  }
  return -1;
}

const INLINE_TAG =
  /^(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?)*\s*\/?>|<\/[A-Za-z][A-Za-z0-9-]*\s*>)/;

/** End offset of an HTML comment or tag starting at `i`, or -1. */
function inlineHtmlEnd(text: string, i: number): number {
  if (text.startsWith('<!--', i)) {
    if (text.startsWith('<!-->', i)) return i + 5;
    if (text.startsWith('<!--->', i)) return i + 6;
    const close = text.indexOf('-->', i + 4);
    return close >= 0 ? close + 3 : -1;
  }
  const m = INLINE_TAG.exec(text.slice(i, i + 2000));
  return m ? i + m[0].length : -1;
}

/** The paragraph's lines that start outside any code span or inline HTML, without their indentation. */
function visibleLineStarts(lines: Line[]): string[] {
  const text = lines.map((l) => l.rest).join('\n');
  const hidden = hiddenRanges(text);
  const out: string[] = [];
  let offset = 0;
  for (const l of lines) {
    const covered = hidden.some(([s, e]) => s < offset && offset < e);
    // A continuation line indented 4+ columns is paragraph text, but nobody types a command that way.
    if (!covered && l.indent <= 3) out.push(l.rest.trimEnd());
    offset += l.rest.length + 1;
  }
  return out;
}

/** Where the scan stands between lines. */
interface Scan {
  out: string[];
  /** The top-level paragraph being read. */
  paragraph: Line[];
  /** The open code fence, if any. */
  fence: { char: string; len: number } | null;
  /** The open HTML block's end condition, if any. */
  html: RegExp | 'blank' | null;
  container: Container | null;
  /** The previous line was paragraph text inside the container: a plain next line continues it lazily. */
  lazy: boolean;
}

export function paragraphLineStarts(markdown: string): string[] {
  const s: Scan = { out: [], paragraph: [], fence: null, html: null, container: null, lazy: false };
  for (const raw of markdown.split(/\r\n|\r|\n/)) {
    const l = measure(raw);
    if (s.fence || s.html) {
      closeCodeOrHtml(s, l, raw);
      continue;
    }
    if (s.container) {
      const inside = s.container.kind === 'quote' ? continuesQuote(s, l) : continuesList(s, s.container, l);
      if (inside) continue;
      s.container = null;
      s.lazy = false;
    }
    readTopLevelLine(s, l);
  }
  flush(s);
  return s.out;
}

function flush(s: Scan): void {
  if (s.paragraph.length) s.out.push(...visibleLineStarts(s.paragraph));
  s.paragraph = [];
}

/** Inside a code fence or an HTML block nothing counts; this line may close it. */
function closeCodeOrHtml(s: Scan, l: Line, raw: string): void {
  if (s.fence) {
    const close = new RegExp(`^\\${s.fence.char}{${s.fence.len},}[ \\t]*$`);
    if (l.indent <= 3 && close.test(l.rest)) s.fence = null;
  } else if (s.html === 'blank' ? l.rest === '' : s.html!.test(raw)) {
    s.html = null;
  }
}

/** True when the line belongs to the open block quote (a `>` line, or a lazy continuation). */
function continuesQuote(s: Scan, l: Line): boolean {
  if (l.indent <= 3 && l.rest.startsWith('>')) {
    s.lazy = isParagraphText(measure(stripQuoteMarkers(l.rest)));
    return true;
  }
  return s.lazy && l.rest !== '' && !startsBlock(l);
}

/** True when the line belongs to the open list (item content, a blank, a next item, or a lazy continuation). */
function continuesList(s: Scan, list: { contentIndent: number }, l: Line): boolean {
  if (l.rest === '') {
    s.lazy = false;
    return true;
  }
  if (l.indent >= list.contentIndent) {
    s.lazy = isParagraphText({ indent: l.indent - list.contentIndent, rest: l.rest });
    return true;
  }
  const item = l.indent <= 3 && !THEMATIC_BREAK.test(l.rest) ? LIST_MARKER.exec(l.rest) : null;
  if (item) {
    openListItem(s, l, item);
    return true;
  }
  return s.lazy && !startsBlock(l);
}

function openListItem(s: Scan, l: Line, item: RegExpExecArray): void {
  s.container = { kind: 'list', contentIndent: listContentIndent(l, item) };
  s.lazy = isParagraphText(measure(l.rest.slice(item[0].length)));
}

/** A line outside any container: paragraph text, or the start of a block that ends the paragraph. */
function readTopLevelLine(s: Scan, l: Line): void {
  if (l.rest === '') return flush(s);
  if (l.indent >= 4) {
    // Inside a paragraph: a continuation line. Otherwise: an indented code block.
    if (s.paragraph.length) s.paragraph.push(l);
    return;
  }
  const fenceOpen = FENCE_OPEN.exec(l.rest);
  if (fenceOpen) {
    flush(s);
    const run = fenceOpen[1] ?? fenceOpen[2]!;
    s.fence = { char: run[0]!, len: run.length };
    return;
  }
  const htmlEnd = htmlBlockEnd(l.rest, s.paragraph.length > 0);
  if (htmlEnd) {
    flush(s);
    if (htmlEnd === 'blank' || !endsOnSameLine(l.rest, htmlEnd)) s.html = htmlEnd;
    return;
  }
  if (l.rest.startsWith('>')) {
    flush(s);
    s.container = { kind: 'quote' };
    s.lazy = isParagraphText(measure(stripQuoteMarkers(l.rest)));
    return;
  }
  if (ATX_HEADING.test(l.rest) || THEMATIC_BREAK.test(l.rest)) return flush(s);
  const item = LIST_MARKER.exec(l.rest);
  if (item) {
    flush(s);
    openListItem(s, l, item);
    return;
  }
  s.paragraph.push(l);
}

/** `> > text` -> `text` (nested quotes are all quote). */
function stripQuoteMarkers(rest: string): string {
  let s = rest;
  for (;;) {
    const m = /^ {0,3}>[ \t]?/.exec(s);
    if (!m) return s;
    s = s.slice(m[0].length);
  }
}

/** Column where a list item's content starts: marker width plus 1-4 spaces (1 when the item starts with code). */
function listContentIndent(l: Line, item: RegExpExecArray): number {
  const spaces = item[2]!.replace(/\t/g, '    ').length;
  return l.indent + item[1]!.length + (spaces >= 1 && spaces <= 4 ? spaces : 1);
}
