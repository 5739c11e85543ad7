/**
 * The line numbers a unified diff (`git diff --binary`) adds, per new-side file: what the scans compare against
 * (only findings on added lines are reported) and what the verifier may use for test files. The patch is
 * model-written, so the parser is bounded (bytes, files, added lines) and never trusts a hunk header's counts beyond
 * the lines that follow it.
 */

export interface DiffLinesFile {
  /** Repository-relative path on the new side (for a deleted file: its old path, with `deleted`). */
  path: string;
  /** The old path when the file was renamed or copied. */
  oldPath?: string;
  added: boolean;
  deleted: boolean;
  binary: boolean;
  /** 1-based line numbers on the new side that the patch adds, ascending. */
  addedLines: number[];
}

export interface DiffLinesLimits {
  maxBytes: number;
  maxFiles: number;
  maxAddedLines: number;
}

export const DIFF_LINES_LIMITS: DiffLinesLimits = {
  maxBytes: 32 * 1024 * 1024,
  maxFiles: 5000,
  maxAddedLines: 500_000,
};

export interface DiffLines {
  files: DiffLinesFile[];
  /** Set when a bound cut the parse short (what was parsed before it is kept). */
  truncated?: string;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** Unquotes git's C-style quoted path (`"a/caf\303\251.py"`) and strips the `a/` or `b/` prefix. */
export function gitPath(raw: string): string | undefined {
  let s = raw.replace(/\t.*$/, '');
  if (s === '/dev/null') return undefined;
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2) s = unquote(s.slice(1, -1));
  return s.replace(/^[ab]\//, '');
}

const ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, '"': 34 };

function unquote(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch !== '\\' || i + 1 >= s.length) {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const next = s[i + 1];
    const octal = /^[0-7]{3}/.exec(s.slice(i + 1, i + 4));
    if (octal) {
      bytes.push(parseInt(octal[0], 8) & 0xff);
      i += 3;
    } else {
      bytes.push(ESCAPES[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

interface Hunk {
  oldLeft: number;
  newLeft: number;
  newLine: number;
}

/** Applies one header line (outside a hunk) to the current file; false when the line is no header. */
function header(line: string, f: DiffLinesFile): boolean {
  if (line.startsWith('new file mode')) f.added = true;
  else if (line.startsWith('deleted file mode')) f.deleted = true;
  else if (line.startsWith('rename from ') || line.startsWith('copy from ')) f.oldPath = line.replace(/^\S+ from /, '');
  else if (line.startsWith('rename to ') || line.startsWith('copy to ')) f.path = line.replace(/^\S+ to /, '');
  else if (line.startsWith('--- ')) {
    const p = gitPath(line.slice(4));
    if (p === undefined) f.added = true;
  } else if (line.startsWith('+++ ')) {
    const p = gitPath(line.slice(4));
    if (p === undefined) f.deleted = true;
    else f.path = p;
  } else if (line.startsWith('GIT binary patch') || /^Binary files .* differ$/.test(line)) f.binary = true;
  else return false;
  return true;
}

/** The path in a `diff --git a/x b/x` line when both sides are the same (the only unambiguous case). */
function diffGitPath(rest: string): string {
  const quoted = /^("(?:[^"\\]|\\.)*") ("(?:[^"\\]|\\.)*")$/.exec(rest);
  if (quoted) return gitPath(quoted[2]) ?? '';
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest.slice(2, half) === rest.slice(half + 3)) return rest.slice(half + 3);
  return gitPath(rest.split(' ').pop() ?? '') ?? '';
}

/** Parses the added line numbers of every file in `patch`, within `limits`. */
export function diffLines(patch: string, limits: DiffLinesLimits = DIFF_LINES_LIMITS): DiffLines {
  const out: DiffLines = { files: [] };
  const text = patch.length > limits.maxBytes ? patch.slice(0, limits.maxBytes) : patch;
  if (text !== patch) out.truncated = `patch larger than ${limits.maxBytes} bytes`;
  let f: DiffLinesFile | undefined;
  let hunk: Hunk | undefined;
  let total = 0;
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (hunk && (hunk.oldLeft > 0 || hunk.newLeft > 0)) {
      const c = line[0];
      if (c === '+' && hunk.newLeft > 0) {
        if (total >= limits.maxAddedLines) {
          out.truncated = `more than ${limits.maxAddedLines} added lines`;
          return out;
        }
        f!.addedLines.push(hunk.newLine++);
        hunk.newLeft--;
        total++;
        continue;
      }
      if (c === '-' && hunk.oldLeft > 0) {
        hunk.oldLeft--;
        continue;
      }
      if ((c === ' ' || line === '') && hunk.oldLeft > 0 && hunk.newLeft > 0) {
        hunk.oldLeft--;
        hunk.newLeft--;
        hunk.newLine++;
        continue;
      }
      if (c === '\\') continue; // "\ No newline at end of file"
      hunk = undefined; // a malformed hunk ends here; the line is read as a header
    }
    if (line.startsWith('diff --git ')) {
      if (out.files.length >= limits.maxFiles) {
        out.truncated = `more than ${limits.maxFiles} files`;
        return out;
      }
      f = { path: diffGitPath(line.slice(11)), added: false, deleted: false, binary: false, addedLines: [] };
      out.files.push(f);
      hunk = undefined;
      continue;
    }
    if (!f) continue;
    const m = HUNK.exec(line);
    if (m) {
      hunk = { oldLeft: Number(m[2] ?? 1), newLeft: Number(m[4] ?? 1), newLine: Number(m[3]) };
      if (hunk.newLine === 0) hunk.newLine = 1;
      continue;
    }
    if (!hunk) header(line, f);
  }
  return out;
}

/** The added lines of each new-side file that still exists after the patch (deleted files left out). */
export function addedLinesByFile(d: DiffLines): Map<string, number[]> {
  const m = new Map<string, number[]>();
  for (const f of d.files) if (!f.deleted && f.path && f.addedLines.length) m.set(f.path, f.addedLines);
  return m;
}
