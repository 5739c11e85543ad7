import { clipCounted } from '../util/clip.js';
import { codeFence } from '../leaf/text.js';

/**
 * Untrusted text in, untrusted text out. Issue text reaches the model only as a reader sees it; text the model
 * (or an issue author) wrote reaches GitHub only in a form that cannot ping people, reference other issues,
 * forge the bot's hidden markers or add headings and other structure to the bot's own posts.
 */

/**
 * Characters nobody sees: zero-width spaces and joiners, word joiner and invisible operators, the byte order
 * mark, soft hyphen, Mongolian vowel separator, bidi embeddings, overrides and isolates (and the Arabic
 * letter mark), and the Unicode tag block, which can spell out a whole hidden instruction.
 */
const INVISIBLE =
  /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/g;

/** Zero-width space: breaks GitHub's autolinking without changing what a reader sees. */
const ZWSP = '\u200B';

/**
 * The issue text as a reader of the rendered issue sees it: HTML comments and invisible characters removed,
 * everything else (code blocks, a `<!--` shown inside code) kept. An HTML comment that is never closed hides
 * the rest of the text when it starts a line (an HTML block), and is shown as typed inside a paragraph.
 */
export function visibleText(markdown: string): string {
  const text = markdown.replace(INVISIBLE, '');
  const out: string[] = [];
  let fence: RegExp | null = null;
  let prose: string[] = [];
  const flushProse = (): boolean => {
    const { kept, hidesRest } = withoutComments(prose.join('\n'));
    out.push(kept);
    prose = [];
    return hidesRest;
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (fence) {
      out.push(line);
      if (fence.test(line)) fence = null;
      continue;
    }
    const open = /^ {0,3}(`{3,}(?=[^`]*$)|~{3,})/.exec(line);
    if (open) {
      if (prose.length && flushProse()) return out.join('\n');
      const run = open[1]!;
      fence = new RegExp(`^ {0,3}\\${run[0]}{${run.length},}[ \\t]*$`);
      out.push(line);
      continue;
    }
    prose.push(line);
  }
  if (prose.length) flushProse();
  return out.join('\n');
}

/**
 * Drops HTML comments from prose (no fenced code in it), keeping code spans as they are. Once no `-->` follows
 * an opening, none follows a later one: remembered, so a line of unclosed `<!--` is not searched to its end from
 * each (quadratic), and whether an opening starts its line is read from the at most 3 characters before it.
 */
function withoutComments(prose: string): { kept: string; hidesRest: boolean } {
  let kept = '';
  let i = 0;
  let unclosedFrom = prose.length + 1;
  while (i < prose.length) {
    if (prose[i] === '`') {
      let n = 0;
      while (prose[i + n] === '`') n++;
      const close = prose.indexOf('`'.repeat(n), i + n);
      const end = close >= 0 ? close + n : i + n;
      kept += prose.slice(i, end);
      i = end;
      continue;
    }
    if (prose.startsWith('<!--', i)) {
      const close = prose.startsWith('<!-->', i)
        ? i + 2
        : prose.startsWith('<!--->', i)
          ? i + 3
          : i + 4 >= unclosedFrom
            ? -1
            : prose.indexOf('-->', i + 4);
      if (close >= 0) {
        i = close + 3;
        continue;
      }
      unclosedFrom = Math.min(unclosedFrom, i + 4);
      if (startsLine(prose, i)) return { kept, hidesRest: true };
    }
    kept += prose[i];
    i++;
  }
  return { kept, hidesRest: false };
}

/** Whether only 0 to 3 spaces stand between the start of the line and `at`. */
function startsLine(text: string, at: number): boolean {
  let i = at;
  while (i > 0 && at - i < 3 && text[i - 1] === ' ') i--;
  return i === 0 || text[i - 1] === '\n';
}

/** Word joiner: invisible and keeps a word whole (no line break inside it), unlike a zero-width space. */
const WORD_JOINER = '\u2060';

/**
 * GitHub's closing keywords (any case) where a reference could follow: a whole word (`_fixes_` counts), then, past
 * any Markdown emphasis (`**Fixes** #1`), a colon or whitespace or `#`, then a word holding `#` or `/` (`#1`,
 * `o/r#1`, any issues or pull URL, a GitHub Enterprise host's too) or `GH-1`. Prose ("Fix crash on start") stays.
 * Group 2 is what follows the first letter, up to where the reference would start; whether one does is asked of
 * referenceAt, not of the pattern: a `\S*[#/]` there rescanned the rest of the word from every keyword in it, so
 * `fix:fix:fix:...` took time quadratic in its length (a minute for 512 KiB).
 */
const CLOSING_KEYWORD = new RegExp(
  String.raw`(?<![\p{L}\p{N}])([cfr])(?=((?:lose[sd]?|ix(?:e[sd])?|esolve[sd]?)(?![\p{L}\p{N}])` +
    String.raw`[*_~\x60]*(?::[*_~\x60]*\s*|\s+|(?=#))))`,
  'giu',
);
const GH_NUMBER = /GH-\d/iuy;

/**
 * Whether a reference starts at a position: the word from there holds `#` or `/`, or it is `GH-<digit>`. Keywords
 * come in increasing positions, so the next whitespace and the next `#` or `/` found for one keyword stay the
 * answer for the next until it passes them: each part of the text is searched once, whatever the keywords in it.
 */
function referenceAt(text: string): (at: number) => boolean {
  const space = /\s/g;
  const mark = /[#/]/g;
  let asked = 0;
  let nextSpace = -1;
  let nextMark = -1;
  const next = (re: RegExp, at: number) => {
    re.lastIndex = at;
    return re.exec(text)?.index ?? text.length;
  };
  return (at) => {
    if (at < asked || nextSpace < at) nextSpace = next(space, at);
    if (at < asked || nextMark < at) nextMark = next(mark, at);
    asked = at;
    GH_NUMBER.lastIndex = at;
    return nextMark < nextSpace || GH_NUMBER.test(text);
  };
}

/**
 * Puts a word joiner after the first letter of each closing keyword that a reference follows. A loop over the
 * matches, not replace() with a function: that costs microseconds a call, and most keywords are left as they are.
 */
function breakClosingKeywords(text: string): string {
  const isReference = referenceAt(text);
  let out = '';
  let kept = 0;
  for (const m of text.matchAll(CLOSING_KEYWORD)) {
    const at = m.index + 1;
    if (!isReference(at + m[2]!.length)) continue;
    out += `${text.slice(kept, at)}${WORD_JOINER}`;
    kept = at;
  }
  return kept === 0 ? text : out + text.slice(kept);
}

/**
 * Makes text inert wherever it lands (prose, code, titles, commit messages): `@user` and `@org/team` no longer
 * mention, `#12`, `GH-12` and `owner/repo#12` or `owner/repo@sha` no longer reference an issue, a closing
 * keyword (close, fixes, resolved, ...) before any reference (an issues or pull URL too) no longer closes one,
 * and `<!--` cannot open or imitate one of the bot's hidden markers. Invisible characters do it, so the text reads
 * the same: a zero-width space after `@` and `#`, a word joiner after a keyword's first letter (`f\u2060ixes`),
 * which leaves GitHub's parser no keyword to match, as a letter in the middle of the word would. Invisible
 * characters that were already there are dropped first.
 */
export function defang(text: string): string {
  return breakClosingKeywords(text.replace(INVISIBLE, ''))
    .replace(/(^|[^A-Za-z0-9])@(?=[A-Za-z0-9])/g, `$1@${ZWSP}`)
    .replace(/([A-Za-z0-9_.-]\/[A-Za-z0-9_.-]+)@(?=[0-9a-f]{7})/gi, `$1@${ZWSP}`)
    .replace(/#(?=\d)/g, `#${ZWSP}`)
    .replace(/\b(GH)-(?=\d)/gi, `$1-${ZWSP}`)
    .replace(/<!--/g, `<${ZWSP}!--`)
    .replace(/-->/g, `--${ZWSP}>`);
}

/**
 * Untrusted text as a block of the bot's Markdown: defanged, cut to `maxChars`, inside a code fence longer
 * than any backtick run in it, so it can add no heading, list, link, image, HTML or `</details>` of its own.
 */
export function untrustedBlock(text: string, maxChars: number): string {
  return codeFence(defang(clipCounted(text.replace(/\r\n?/g, '\n').trim(), maxChars)), 'text');
}

/**
 * Untrusted text inline in the bot's Markdown: one line, defanged, and every ASCII punctuation character
 * backslash-escaped (CommonMark allows it for all of them), so it renders as typed: no emphasis, link,
 * code span, HTML or heading.
 */
export function untrustedInline(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const cut = flat.length <= maxChars ? flat : `${flat.slice(0, Math.max(0, maxChars - 1))}…`;
  return defang(cut).replace(/[!-/:-@[-`{-~]/g, (c) => (c === '@' ? c : `\\${c}`));
}

/** A title or commit subject (plain text, but GitHub links and notifies in it): one line, defanged. */
export function untrustedLine(text: string, maxChars: number): string {
  const flat = text.replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
  return defang(flat.length <= maxChars ? flat : `${flat.slice(0, Math.max(0, maxChars - 1))}…`);
}
