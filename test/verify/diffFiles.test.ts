import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTestFile, patchFiles } from '../../src/verify/diffFiles.js';

/** A real `git diff --binary` of a change that adds, modifies, deletes and renames, with awkward names. */
function realPatch(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vp-diff-'));
  const git = (...args: string[]): string =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-C', dir, ...args], { encoding: 'utf8' });
  try {
    git('init', '-q');
    mkdirSync(path.join(dir, 'tests'));
    writeFileSync(path.join(dir, 'keep.py'), 'a = 1\n');
    writeFileSync(path.join(dir, 'gone.py'), 'b = 1\n');
    writeFileSync(path.join(dir, 'tests/test_old.py'), 'def test_x():\n    assert True\n'.repeat(5));
    writeFileSync(path.join(dir, 'with space.py'), 'c = 1\n');
    git('add', '.');
    git('commit', '-qm', 'base');
    writeFileSync(path.join(dir, 'keep.py'), 'a = 2\n');
    rmSync(path.join(dir, 'gone.py'));
    git('mv', 'tests/test_old.py', 'tests/test_new.py');
    writeFileSync(path.join(dir, 'with space.py'), 'c = 2\n');
    writeFileSync(path.join(dir, 'café.py'), 'd = 1\n');
    writeFileSync(path.join(dir, 'blob.bin'), Buffer.from([0, 1, 2, 255]));
    git('add', '-A');
    return git('diff', '--binary', '-M', '--cached');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('patchFiles', () => {
  it('reads added, modified, deleted and renamed files from a real git diff, quoted names included', () => {
    const files = patchFiles(realPatch());
    expect(files.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: 'blob.bin', change: 'added' },
      { path: 'café.py', change: 'added' },
      { path: 'gone.py', change: 'deleted' },
      { path: 'keep.py', change: 'modified' },
      { path: 'tests/test_new.py', change: 'renamed', oldPath: 'tests/test_old.py' },
      { path: 'with space.py', change: 'modified' },
    ]);
  });

  it('is empty for an empty patch and ignores text that only looks like a header inside a hunk', () => {
    expect(patchFiles('')).toEqual([]);
    const patch =
      'diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-new file mode 100644\n+rename to y\n';
    expect(patchFiles(patch)).toEqual([{ path: 'x.py', change: 'modified' }]);
  });
});

describe('isTestFile', () => {
  it.each([
    'tests/test_calc.py',
    'pkg/tests/helpers.py',
    'test_x.py',
    'calc_test.py',
    'conftest.py',
    'src/a.test.ts',
    'src/a.spec.jsx',
    'src/__tests__/a.js',
    'pkg/a_test.go',
    'spec/a_spec.rb',
    'src/test/java/FooTest.java',
  ])('%s is a test file', (p) => expect(isTestFile(p)).toBe(true));

  it.each(['src/calc.py', 'src/contest.py', 'README.md', 'src/testing_utils_not.py', 'src/latest.ts'])(
    '%s is not',
    (p) => expect(isTestFile(p)).toBe(false),
  );
});
