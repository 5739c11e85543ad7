/**
 * Python's `textwrap.dedent` and `str.strip()`, ported exactly: the Harbor SWE-bench adapter built the instruction
 * FrogNano was evaluated on as `dedent(problem_statement).strip()`, and the first user message must match it byte
 * for byte. test/leaf/pyText.test.ts checks both against python3 on generated inputs.
 */

/** The characters `str.isspace()` is true for (Unicode White_Space as CPython defines it; not JS's `\s` set). */
const PY_WHITESPACE = new Set(
  '\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a' +
    '\u2028\u2029\u202f\u205f\u3000',
);

/** `text.strip()` with no argument: JS's trim() differs (it strips U+FEFF, keeps U+001C-U+001F and U+0085). */
export function pyStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && PY_WHITESPACE.has(text[start]!)) start++;
  while (end > start && PY_WHITESPACE.has(text[end - 1]!)) end--;
  return text.slice(start, end);
}

/** The longest common prefix of two margins (textwrap's loop over zip(margin, indent)). */
function commonMargin(margin: string, indent: string): string {
  let i = 0;
  while (i < margin.length && i < indent.length && margin[i] === indent[i]) i++;
  return margin.slice(0, i);
}

/**
 * `textwrap.dedent` as CPython 3.11-3.13 has it: lines are split on `\n` only (a CRLF line keeps its `\r`, which
 * counts as text); lines of only spaces and tabs become empty; the margin is the longest run of spaces and tabs
 * common to every other line, compared character by character (a tab is not eight spaces). JS's multiline `^`/`$`
 * would also break at `\r` and U+2028, so this works line by line instead of porting the regular expressions.
 * (CPython 3.14 rewrote dedent and treats every `str.isspace()` line, `\r` alone included, as blank.)
 */
export function pyDedent(text: string): string {
  const lines = text.split('\n').map((line) => (/^[ \t]+$/.test(line) ? '' : line));
  let margin: string | undefined;
  for (const line of lines) {
    const indent = /^[ \t]*/.exec(line)![0];
    if (indent.length === line.length) continue; // empty: no character after the indent
    if (margin === undefined || margin.startsWith(indent)) margin = indent;
    else if (!indent.startsWith(margin)) margin = commonMargin(margin, indent);
  }
  if (!margin) return lines.join('\n');
  const cut = margin;
  return lines.map((line) => (line.startsWith(cut) ? line.slice(cut.length) : line)).join('\n');
}
