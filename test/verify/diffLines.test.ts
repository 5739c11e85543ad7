import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { addedLinesByFile, diffLines, gitPath } from '../../src/verify/diffLines.js';

/** A real `git diff --binary` of the changes `edit` makes to a repository holding `files`. */
function gitDiff(files: Record<string, string>, edit: (dir: string) => void): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fn-difflines-'));
  try {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: dir, encoding: 'utf8' });
    git('init', '-q');
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    git('add', '-A');
    git('commit', '-qm', 'base');
    edit(dir);
    git('add', '-A');
    return git('diff', '--binary', '--cached', '-M', 'HEAD');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('diffLines', () => {
  it('gives the new-side line numbers of added lines, across hunks, for modified and new files', () => {
    const old = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`);
    const patch = gitDiff({ 'a.py': old.join('\n') + '\n' }, (dir) => {
      const lines = [...old];
      lines.splice(1, 0, 'new two'); // new line 2
      lines.splice(25, 1, 'changed'); // replaces old line 25 → new line 26
      writeFileSync(path.join(dir, 'a.py'), lines.join('\n') + '\n');
      writeFileSync(path.join(dir, 'b.js'), 'x\n\ny\n');
    });
    const d = diffLines(patch);
    expect(d.truncated).toBeUndefined();
    expect(d.files).toEqual([
      { path: 'a.py', added: false, deleted: false, binary: false, addedLines: [2, 26] },
      { path: 'b.js', added: true, deleted: false, binary: false, addedLines: [1, 2, 3] },
    ]);
  });

  it('follows renames, deletions, binary files and quoted names', () => {
    const patch = gitDiff({ 'old name.py': 'a\nb\nc\nd\ne\n', 'gone.txt': 'bye\n', 'img.bin': 'x' }, (dir) => {
      renameSync(path.join(dir, 'old name.py'), path.join(dir, 'new name.py'));
      writeFileSync(path.join(dir, 'new name.py'), 'a\nb\nc\nd\ne\nf\n');
      rmSync(path.join(dir, 'gone.txt'));
      writeFileSync(path.join(dir, 'img.bin'), Buffer.from([0, 1, 2, 255, 0]));
      writeFileSync(path.join(dir, 'café "q".py'), 'print(1)\n');
    });
    const byPath = Object.fromEntries(diffLines(patch).files.map((f) => [f.path, f]));
    expect(byPath['new name.py']).toMatchObject({ oldPath: 'old name.py', addedLines: [6] });
    expect(byPath['gone.txt']).toMatchObject({ deleted: true, addedLines: [] });
    expect(byPath['img.bin']).toMatchObject({ binary: true, addedLines: [] });
    expect(byPath['café "q".py']).toMatchObject({ added: true, addedLines: [1] });
    expect([...addedLinesByFile(diffLines(patch)).keys()].sort()).toEqual(['café "q".py', 'new name.py']);
  });

  it('reads content lines that look like headers as content while the hunk lasts', () => {
    const patch = gitDiff({ 'x.txt': 'keep\n' }, (dir) =>
      writeFileSync(path.join(dir, 'x.txt'), 'keep\n++ b/evil\n-- a/evil\ndiff --git a/z b/z\n@@ -1 +1 @@\n'),
    );
    const d = diffLines(patch);
    expect(d.files.map((f) => f.path)).toEqual(['x.txt']);
    expect(d.files[0].addedLines).toEqual([2, 3, 4, 5]);
  });

  it('bounds hostile input: bytes, files and added lines, and survives lying hunk headers', () => {
    const many = Array.from({ length: 20 }, (_, i) => `diff --git a/f${i} b/f${i}\n+++ b/f${i}\n@@ -0,0 +1 @@\n+x\n`);
    expect(diffLines(many.join(''), { maxBytes: 1e6, maxFiles: 5, maxAddedLines: 1e6 })).toMatchObject({
      truncated: 'more than 5 files',
    });
    expect(diffLines(many.join(''), { maxBytes: 1e6, maxFiles: 100, maxAddedLines: 3 }).truncated).toBe(
      'more than 3 added lines',
    );
    expect(diffLines(many.join(''), { maxBytes: 50, maxFiles: 100, maxAddedLines: 100 }).truncated).toBe(
      'patch larger than 50 bytes',
    );
    const lying = 'diff --git a/f b/f\n+++ b/f\n@@ -1,999999999 +1,999999999 @@\n+one\n garbage\nnot a diff line\n';
    expect(diffLines(lying).files[0].addedLines).toEqual([1]);
    expect(diffLines('').files).toEqual([]);
    expect(diffLines('+++ b/x\n@@ -0,0 +1 @@\n+orphan\n').files).toEqual([]);
  });

  it('unquotes git paths', () => {
    expect(gitPath('"b/caf\\303\\251\\t.py"')).toBe('café\t.py');
    expect(gitPath('/dev/null')).toBeUndefined();
    expect(gitPath('b/x.py\t')).toBe('x.py');
  });
});
