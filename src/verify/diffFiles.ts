/**
 * Which files a patch adds, modifies, deletes or renames, read from its `diff --git` headers (the patch is
 * `git diff --binary`, made by the bot). Pure text: nothing here touches the file system.
 */
export interface PatchFile {
  path: string;
  change: 'added' | 'modified' | 'deleted' | 'renamed';
  oldPath?: string;
}

/** At most this many files are read from one patch (a patch touching more is reported by what it starts with). */
export const MAX_PATCH_FILES = 5_000;

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  '"': '"',
  '\\': '\\',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  r: '\r',
};

/** Git's C-style quoting (`"a/caf\303\251.py"`): octal escapes are UTF-8 bytes. */
function unquote(text: string): string {
  if (!text.startsWith('"') || !text.endsWith('"')) return text;
  const bytes: number[] = [];
  const body = text.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const octal = /^[0-7]{3}/.exec(body.slice(i + 1));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(...Buffer.from(ESCAPES[body[i + 1]] ?? body[i + 1] ?? '', 'utf8'));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function stripPrefix(path: string, prefix: 'a/' | 'b/'): string {
  return path.startsWith(prefix) ? path.slice(2) : path;
}

/** The two paths of `diff --git A B`; with unquoted names that contain spaces, the equal-halves form is used. */
function headerPaths(rest: string): [string, string] {
  const quoted = /^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*")$|^("(?:[^"\\]|\\.)*") (\S+)$/.exec(rest);
  if (quoted) {
    const a = quoted[1] ?? quoted[3];
    const b = quoted[2] ?? quoted[4];
    return [stripPrefix(unquote(a), 'a/'), stripPrefix(unquote(b), 'b/')];
  }
  const half = (rest.length - 5) / 2;
  if (Number.isInteger(half) && rest.startsWith('a/') && rest.slice(half + 2, half + 5) === ' b/') {
    const a = rest.slice(2, half + 2);
    if (rest.slice(half + 5) === a) return [a, a];
  }
  const split = rest.indexOf(' b/');
  return split < 0 ? [rest, rest] : [stripPrefix(rest.slice(0, split), 'a/'), rest.slice(split + 3)];
}

/** The path of a `---`/`+++` line: git ends it with a tab when the name has a space. */
function markerPath(line: string, prefix: 'a/' | 'b/'): string {
  return stripPrefix(unquote(line.slice(4).replace(/\t$/, '')), prefix);
}

function applyExtendedHeader(file: PatchFile, line: string): void {
  if (line.startsWith('new file mode')) file.change = 'added';
  else if (line.startsWith('deleted file mode')) file.change = 'deleted';
  else if (line.startsWith('rename from ')) {
    file.change = 'renamed';
    file.oldPath = unquote(line.slice('rename from '.length));
  } else if (line.startsWith('rename to ')) file.path = unquote(line.slice('rename to '.length));
  else if (line.startsWith('+++ ') && line !== '+++ /dev/null') file.path = markerPath(line, 'b/');
  else if (line.startsWith('--- ') && line !== '--- /dev/null' && file.change !== 'renamed') {
    const old = markerPath(line, 'a/');
    if (file.change === 'deleted') file.path = old;
  }
}

/** The files of a patch, in the order it names them. */
export function patchFiles(patch: string): PatchFile[] {
  const files: PatchFile[] = [];
  let current: PatchFile | undefined;
  let inHeader = false;
  for (const raw of patch.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.startsWith('diff --git ')) {
      if (files.length >= MAX_PATCH_FILES) break;
      const [a, b] = headerPaths(line.slice('diff --git '.length));
      current = { path: b, change: 'modified' };
      if (a !== b) Object.assign(current, { change: 'renamed', oldPath: a });
      files.push(current);
      inHeader = true;
    } else if (current && inHeader) {
      if (line.startsWith('@@') || line.startsWith('GIT binary patch')) inHeader = false;
      else applyExtendedHeader(current, line);
    }
  }
  return files;
}

const TEST_DIRS = new Set(['test', 'tests', '__tests__', 'spec', 'specs', 'testing', 'e2e']);
const TEST_NAMES = [
  /^test_.*\.py$/,
  /_tests?\.py$/,
  /^conftest\.py$/,
  /\.(test|spec)\.[cm]?[jt]sx?$/,
  /_test\.go$/,
  /_spec\.rb$/,
  /(Test|Tests|Spec)\.(java|kt|scala|cs)$/,
];

/** Whether a path is a test file by the usual conventions (pytest, unittest, jest/vitest, go, rspec, JUnit, cargo). */
export function isTestFile(path: string): boolean {
  const parts = path.split('/');
  const name = parts[parts.length - 1] ?? '';
  if (parts.slice(0, -1).some((dir) => TEST_DIRS.has(dir.toLowerCase()))) return true;
  return TEST_NAMES.some((re) => re.test(name));
}
