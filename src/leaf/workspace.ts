import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runProcess } from '../sandbox/process.js';

/**
 * A private copy of a repository for one run. The sandbox (and so the model) may change anything in
 * it; the source directory is never touched. Everything that could leak from the host or run host
 * code is stripped from the copy's .git: remotes and their URLs, credential helpers, url rewrites,
 * extra HTTP headers, includes, hooks and hooksPath, fsmonitor, reflogs (a clone's reflog records the
 * URL it came from).
 */
export interface Workspace {
  /** Temporary directory owning everything of this run; removed by cleanup(). */
  root: string;
  /** The repository copy (root/repo): what the sandbox mounts. */
  repoDir: string;
  /** HEAD of the source when copied: the base the patch is computed against. */
  baseCommit: string;
  /** Removes the workspace. Safe to call twice. */
  cleanup(): Promise<void>;
}

export class WorkspaceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkspaceError';
  }
}

/** Config keys that carry nothing but the repository's format; everything else is dropped. */
const KEEP_CONFIG =
  /^(core\.(repositoryformatversion|filemode|bare|symlinks|ignorecase|precomposeunicode|logallrefupdates)|extensions\..+)$/i;

/** git on the host, with no system/global config and no hooks, so a hostile repo cannot run anything. */
export async function hostGit(
  args: string[],
  cwd: string,
  home: string,
  o: { maxOutputBytes?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string; truncated: boolean }> {
  const r = await runProcess(['git', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', ...args], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      LC_ALL: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
    },
    timeoutMs: 120_000,
    maxOutputBytes: o.maxOutputBytes,
  });
  return {
    code: r.timedOut ? null : r.exitCode,
    stdout: r.stdout,
    stderr: r.stderr,
    truncated: r.stdoutTruncated > 0,
  };
}

/** Rewrites a git config file keeping only KEEP_CONFIG keys. `--file` never follows includes. */
async function sanitizeConfig(file: string, home: string): Promise<void> {
  const listed = await hostGit(['config', '--file', file, '--list', '--null'], path.dirname(file), home);
  if (listed.code !== 0) throw new WorkspaceError(`cannot read ${file}: ${listed.stderr.trim()}`);
  const keep: [string, string][] = [];
  for (const entry of listed.stdout.split('\0')) {
    if (!entry) continue;
    const nl = entry.indexOf('\n');
    const key = nl === -1 ? entry : entry.slice(0, nl);
    const value = nl === -1 ? 'true' : entry.slice(nl + 1);
    if (KEEP_CONFIG.test(key)) keep.push([key, value]);
  }
  await fs.writeFile(file, '');
  for (const [key, value] of keep) {
    const r = await hostGit(['config', '--file', file, key, value], path.dirname(file), home);
    if (r.code !== 0) throw new WorkspaceError(`cannot write ${file}: ${r.stderr.trim()}`);
  }
}

/** Strips one git directory (the main one or a submodule's under .git/modules). */
export async function sanitizeGitDir(gitDir: string, home: string): Promise<void> {
  await sanitizeConfig(path.join(gitDir, 'config'), home);
  await fs.rm(path.join(gitDir, 'config.worktree'), { force: true });
  await fs.rm(path.join(gitDir, 'hooks'), { recursive: true, force: true });
  await fs.mkdir(path.join(gitDir, 'hooks'));
  await fs.rm(path.join(gitDir, 'logs'), { recursive: true, force: true });
  await fs.rm(path.join(gitDir, 'FETCH_HEAD'), { force: true });
}

async function findSubmoduleGitDirs(dir: string, out: string[] = []): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  if (entries.some((e) => e.name === 'config' && e.isFile()) && entries.some((e) => e.name === 'HEAD')) out.push(dir);
  for (const e of entries)
    if (e.isDirectory() && !['objects', 'refs', 'logs', 'hooks', 'info'].includes(e.name))
      await findSubmoduleGitDirs(path.join(dir, e.name), out);
  return out;
}

/** Any FIFO, socket or device node under dir (GNU find, stops at the first); such trees take the slow copy. */
async function hasSpecialFiles(dir: string, home: string): Promise<boolean | null> {
  const r = await runProcess(
    [
      'find',
      dir,
      '(',
      '-type',
      'p',
      '-o',
      '-type',
      's',
      '-o',
      '-type',
      'b',
      '-o',
      '-type',
      'c',
      ')',
      '-print',
      '-quit',
    ],
    {
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      timeoutMs: 120_000,
      maxOutputBytes: 4096,
    },
  );
  if (r.timedOut || r.exitCode !== 0) return null;
  return r.stdout.trim() !== '';
}

/**
 * The copy: GNU `cp -a` (links copied as links, never followed; modes kept, files owned by the runner) when the tree
 * holds only files, directories and links: 7x faster than fs.cp with a per-entry filter on a 40k-file repository
 * (1.6 s against 11.6 s at load). A tree with FIFOs, sockets or device nodes (a working directory with a dev
 * server's socket) takes fs.cp, which skips them: they cannot be copied meaningfully and mean nothing to the patch.
 */
async function copyTree(source: string, target: string, home: string): Promise<void> {
  if ((await hasSpecialFiles(source, home)) === false) {
    const r = await runProcess(['cp', '-a', '--no-preserve=ownership', '--', source, target], {
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
      timeoutMs: 600_000,
      maxOutputBytes: 64 * 1024,
    });
    if (!r.timedOut && r.exitCode === 0) return;
    await fs.rm(target, { recursive: true, force: true });
    if (r.timedOut) throw new WorkspaceError(`cannot copy ${source}: the copy took longer than 10 minutes`);
    throw new WorkspaceError(`cannot copy ${source}: ${r.stderr.trim().split('\n')[0] ?? `cp exited ${r.exitCode}`}`);
  }
  try {
    await fs.cp(source, target, {
      recursive: true,
      verbatimSymlinks: true,
      force: true,
      filter: async (src) => {
        const s = await fs.lstat(src);
        return s.isFile() || s.isDirectory() || s.isSymbolicLink();
      },
    });
  } catch (err) {
    throw new WorkspaceError(`cannot copy ${source}: ${(err as Error).message}`);
  }
}

export interface PrepareWorkspaceOptions {
  /** Parent of the temporary directory (default: the OS temp dir). */
  tmpDir?: string;
}

/** Copies sourceDir (uncommitted changes included) into a fresh temporary workspace. */
export async function prepareWorkspace(sourceDir: string, opts: PrepareWorkspaceOptions = {}): Promise<Workspace> {
  const source = path.resolve(sourceDir);
  const st = await fs.stat(source).catch(() => null);
  if (!st) throw new WorkspaceError(`source directory ${source} does not exist or cannot be read`);
  if (!st.isDirectory()) throw new WorkspaceError(`source ${source} is not a directory`);
  const dotGit = await fs.lstat(path.join(source, '.git')).catch(() => null);
  if (!dotGit) throw new WorkspaceError(`${source} is not a git repository (it has no .git directory)`);
  if (!dotGit.isDirectory()) {
    throw new WorkspaceError(
      `${source} is a git worktree or submodule (.git is a file pointing elsewhere); use a regular clone`,
    );
  }

  const root = await fs.mkdtemp(path.join(opts.tmpDir ?? os.tmpdir(), 'frognano-ws-'));
  // mkdtemp makes it 0700; a sandbox in a user namespace (bwrap) or running as another uid must be able
  // to pass through to root/repo. Traverse only: the directory cannot be listed, and the copy keeps the
  // source's own permissions.
  await fs.chmod(root, 0o711);
  const cleanup = async () => {
    await fs.rm(root, { recursive: true, force: true });
  };
  try {
    const repoDir = path.join(root, 'repo');
    const home = path.join(root, 'home');
    await fs.mkdir(home);
    await copyTree(source, repoDir, home);
    const gitDir = path.join(repoDir, '.git');
    const headOk = await fs.stat(path.join(gitDir, 'HEAD')).catch(() => null);
    if (!headOk) throw new WorkspaceError(`${source} is not a readable git repository (.git/HEAD is missing)`);
    await sanitizeGitDir(gitDir, home);
    for (const sub of await findSubmoduleGitDirs(path.join(gitDir, 'modules'))) await sanitizeGitDir(sub, home);

    // Objects borrowed from another repository on the host would be missing inside a container: copy them in.
    const alternates = path.join(gitDir, 'objects', 'info', 'alternates');
    if (await fs.stat(alternates).catch(() => null)) {
      const r = await hostGit(['repack', '-a', '-d', '-q'], repoDir, home);
      if (r.code !== 0)
        throw new WorkspaceError(`cannot make ${source} self-contained (git repack): ${r.stderr.trim()}`);
      await fs.rm(alternates, { force: true });
    }

    const head = await hostGit(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], repoDir, home);
    if (head.code !== 0 || !/^[0-9a-f]{40,64}$/.test(head.stdout.trim())) {
      const check = await hostGit(['rev-parse', '--git-dir'], repoDir, home);
      if (check.code !== 0)
        throw new WorkspaceError(`${source} is not a readable git repository: ${check.stderr.trim()}`);
      throw new WorkspaceError(
        `${source} has no commits yet; commit something first so changes can be diffed against it`,
      );
    }
    return { root, repoDir, baseCommit: head.stdout.trim(), cleanup };
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
}
