import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { prepareWorkspace, WorkspaceError, type Workspace } from '../../src/leaf/workspace.js';
import { git, makeRepo, removeDir, SAMPLE_FILES, tempDir } from './helpers.js';

describe('prepareWorkspace', () => {
  let source: string;
  let ws: Workspace | undefined;
  beforeEach(async () => {
    source = await makeRepo(SAMPLE_FILES);
  });
  afterEach(async () => {
    await ws?.cleanup();
    ws = undefined;
    await removeDir(source);
  });

  it('copies the repository with uncommitted changes and records HEAD as the base', async () => {
    await writeFile(path.join(source, 'README.md'), '# calc (edited)\n');
    await writeFile(path.join(source, 'untracked.txt'), 'new\n');
    await chmod(path.join(source, 'test/math.test.sh'), 0o755);
    git(source, 'add', 'test/math.test.sh');
    git(source, 'commit', '-q', '-m', 'exec bit');
    await symlink('/etc/passwd', path.join(source, 'link-out'));
    execFileSync('mkfifo', [path.join(source, 'dev.fifo')]);
    ws = await prepareWorkspace(source);
    await expect(stat(path.join(ws.repoDir, 'dev.fifo'))).rejects.toThrow();

    expect(ws.baseCommit).toBe(git(source, 'rev-parse', 'HEAD').trim());
    expect(ws.repoDir).toBe(path.join(ws.root, 'repo'));
    expect((await stat(ws.root)).mode & 0o777).toBe(0o711); // a sandbox user may pass through, not list
    expect(await readFile(path.join(ws.repoDir, 'README.md'), 'utf8')).toBe('# calc (edited)\n');
    expect(await readFile(path.join(ws.repoDir, 'untracked.txt'), 'utf8')).toBe('new\n');
    // Modes and links survive as they are: the copy shows exactly the source's changes.
    expect(git(ws.repoDir, 'status', '--porcelain').split('\n').filter(Boolean).sort()).toEqual([
      ' M README.md',
      '?? link-out',
      '?? untracked.txt',
    ]);
    expect((await stat(path.join(ws.repoDir, 'test/math.test.sh'))).mode & 0o111).not.toBe(0);
    // Changing the copy never touches the source.
    await writeFile(path.join(ws.repoDir, 'src/math.js'), 'changed');
    expect(await readFile(path.join(source, 'src/math.js'), 'utf8')).toBe(SAMPLE_FILES['src/math.js']);
  });

  it('a tree of files, directories and links (cp -a): links stay links, modes kept, nothing shared with the source', async () => {
    await symlink('/etc/passwd', path.join(source, 'link-out'));
    await symlink('src/math.js', path.join(source, 'link-in'));
    await chmod(path.join(source, 'test/math.test.sh'), 0o755);
    ws = await prepareWorkspace(source);
    expect(await readlink(path.join(ws.repoDir, 'link-out'))).toBe('/etc/passwd');
    expect(await readlink(path.join(ws.repoDir, 'link-in'))).toBe('src/math.js');
    expect((await lstat(path.join(ws.repoDir, 'link-out'))).isSymbolicLink()).toBe(true);
    expect((await stat(path.join(ws.repoDir, 'test/math.test.sh'))).mode & 0o777).toBe(0o755);
    const [a, b] = [await stat(path.join(source, 'src/math.js')), await stat(path.join(ws.repoDir, 'src/math.js'))];
    expect(b.ino).not.toBe(a.ino);
    expect(b.uid).toBe(process.getuid!());
    // The uncommitted mode change shows as in the source.
    expect(git(ws.repoDir, 'status', '--porcelain').split('\n').filter(Boolean).sort()).toEqual([
      ' M test/math.test.sh',
      '?? link-in',
      '?? link-out',
    ]);
  });

  it('strips remotes, credentials, url rewrites, includes, hooks and reflogs from the copy', async () => {
    const token = 'ghs_abcdefghijklmnopqrstuvwxyz0123456789';
    git(source, 'remote', 'add', 'origin', `https://x-access-token:${token}@github.com/acme/calc.git`);
    git(source, 'config', 'credential.helper', 'store --file /root/.git-credentials');
    git(source, 'config', `http.https://github.com/.extraheader`, `AUTHORIZATION: basic ${token}`);
    git(source, 'config', 'url.https://evil.example/.insteadOf', 'https://github.com/');
    git(source, 'config', 'core.hooksPath', '/host/hooks');
    git(source, 'config', 'core.fsmonitor', 'touch /tmp/pwned-by-fsmonitor');
    git(source, 'config', 'include.path', '/root/.secret-gitconfig');
    await writeFile(path.join(source, '.git/hooks/pre-commit'), '#!/bin/sh\necho hook\n', { mode: 0o755 });
    git(
      source,
      'update-ref',
      '-m',
      `clone: from https://x-access-token:${token}@github.com/acme/calc.git`,
      'refs/heads/main',
      'HEAD',
    );
    ws = await prepareWorkspace(source);

    const config = await readFile(path.join(ws.repoDir, '.git/config'), 'utf8');
    expect(config).not.toContain(token);
    expect(config).not.toMatch(/remote|credential|extraheader|insteadof|hookspath|fsmonitor|include/i);
    expect(config).toMatch(/repositoryformatversion = 0/);
    expect(git(ws.repoDir, 'remote', '-v')).toBe('');
    expect(await readdir(path.join(ws.repoDir, '.git/hooks'))).toEqual([]);
    await expect(stat(path.join(ws.repoDir, '.git/logs'))).rejects.toThrow();
    // The copy is still a working repository.
    expect(git(ws.repoDir, 'log', '--format=%s')).toBe('initial\n');
    // And the source kept its configuration.
    expect(git(source, 'config', 'remote.origin.url')).toContain('acme/calc');
  });

  it('makes a repository that borrows objects from another (git clone --shared) self-contained', async () => {
    const parent = await tempDir();
    try {
      const shared = path.join(parent, 'shared');
      git(parent, 'clone', '-q', '--shared', source, shared);
      ws = await prepareWorkspace(shared);
      await expect(stat(path.join(ws.repoDir, '.git/objects/info/alternates'))).rejects.toThrow();
      await removeDir(source); // the objects must not come from there any more
      expect(git(ws.repoDir, 'cat-file', '-p', `${ws.baseCommit}:src/math.js`)).toBe(SAMPLE_FILES['src/math.js']);
    } finally {
      await removeDir(parent);
    }
  });

  it('refuses clearly what it cannot use', async () => {
    const plain = await tempDir();
    const empty = await tempDir();
    try {
      await expect(prepareWorkspace(path.join(plain, 'missing'))).rejects.toThrow(/does not exist/);
      await expect(prepareWorkspace(plain)).rejects.toThrow(/is not a git repository/);
      await writeFile(path.join(plain, 'file'), 'x');
      await expect(prepareWorkspace(path.join(plain, 'file'))).rejects.toThrow(/is not a directory/);
      git(empty, 'init', '-q');
      await expect(prepareWorkspace(empty)).rejects.toThrow(/has no commits yet/);
      await mkdir(path.join(plain, 'wt'));
      await writeFile(path.join(plain, 'wt/.git'), `gitdir: ${source}/.git/worktrees/wt\n`);
      const err = await prepareWorkspace(path.join(plain, 'wt')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkspaceError);
      expect((err as Error).message).toMatch(/worktree or submodule/);
      await writeFile(path.join(empty, '.git/HEAD'), 'garbage');
      await expect(prepareWorkspace(empty)).rejects.toThrow(/not a readable git repository/);
    } finally {
      await removeDir(plain);
      await removeDir(empty);
    }
  });

  it('cleanup removes the workspace and can be called twice', async () => {
    ws = await prepareWorkspace(source);
    await ws.cleanup();
    await expect(stat(ws.root)).rejects.toThrow();
    await ws.cleanup();
  });
});
