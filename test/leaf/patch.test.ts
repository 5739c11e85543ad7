import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { computePatch, PATCH_EXCLUDES } from '../../src/leaf/patch.js';
import { LocalSandbox } from '../../src/sandbox/local.js';
import { git, isolateHome, makeRepo, removeDir } from './helpers.js';

isolateHome();

async function put(root: string, rel: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await writeFile(path.join(root, rel), content);
}

describe('computePatch', () => {
  let repo: string | undefined;
  afterEach(async () => removeDir(repo));

  it('leaves test and install byproducts out of the patch of a repository without a .gitignore', async () => {
    repo = await makeRepo({ 'calc.py': 'def add(a, b):\n    return a - b\n', 'vendor/tracked.pyc': 'old\n' });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    await put(repo, 'calc.py', 'def add(a, b):\n    return a + b\n');
    await put(repo, 'test_calc.py', 'from calc import add\n');
    await put(repo, '__pycache__/calc.cpython-311.pyc', 'bytecode');
    await put(repo, 'pkg/__pycache__/mod.cpython-311.pyc', 'bytecode');
    await put(repo, 'stray.pyc', 'bytecode');
    await put(repo, '.pytest_cache/v/cache/lastfailed', '{}');
    await put(repo, 'calc.egg-info/PKG-INFO', 'Name: calc');
    await put(repo, 'node_modules/left-pad/index.js', 'module.exports = 1;');
    // A tracked file that matches a pattern still counts: only untracked files are skipped.
    await put(repo, 'vendor/tracked.pyc', 'new\n');

    const sandbox = new LocalSandbox(repo);
    try {
      const { patch, changedFiles } = await computePatch(sandbox, base);
      expect(changedFiles.map((f) => f.path).sort()).toEqual(['calc.py', 'test_calc.py', 'vendor/tracked.pyc']);
      expect(patch).not.toMatch(/__pycache__|pytest_cache|egg-info|node_modules|stray\.pyc/);
    } finally {
      await sandbox.close();
    }
    // The exclude list lived in a temporary file: nothing of it is left in the repository.
    expect(git(repo, 'status', '--porcelain', '--ignored')).not.toMatch(/frognano|exclude/);
    expect(PATCH_EXCLUDES).toContain('__pycache__/');
  });

  it("still honours the repository's own .gitignore", async () => {
    repo = await makeRepo({ '.gitignore': 'build/\n', 'a.txt': 'a\n' });
    const base = git(repo, 'rev-parse', 'HEAD').trim();
    await put(repo, 'build/out.bin', 'x');
    await put(repo, 'b.txt', 'b\n');
    const sandbox = new LocalSandbox(repo);
    try {
      const { changedFiles } = await computePatch(sandbox, base);
      expect(changedFiles.map((f) => f.path)).toEqual(['b.txt']);
    } finally {
      await sandbox.close();
    }
  });
});
