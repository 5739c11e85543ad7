import { execFile } from 'node:child_process';
import { access, constants, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { setupError } from './exitCodes.js';

/**
 * Read-only git with nothing from the user's environment that could redirect it (GIT_DIR, pagers).
 * GIT_OPTIONAL_LOCKS=0 stops `git status` from refreshing .git/index: the source repository must stay byte-identical.
 */
function git(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      // Only reads; safe.directory=* so a checkout owned by another user can still be inspected (solve copies it).
      ['-c', 'safe.directory=*', '-c', 'core.fsmonitor=false', ...args],
      {
        cwd,
        timeout: 30_000,
        maxBuffer: 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/tmp',
          LC_ALL: 'C',
          GIT_OPTIONAL_LOCKS: '0',
        },
      },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 127
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

export interface SourceRepo {
  /** Absolute path of the repository's top level. */
  dir: string;
  head: string;
  /** Files with uncommitted changes: they are part of the copy the model works on, so of the patch too. */
  dirtyFiles: number;
}

/**
 * Makes sure `solve` was pointed at something it can work on — an existing, readable git checkout with
 * at least one commit, given by its top-level directory — and says precisely what is wrong otherwise.
 */
export async function checkSourceRepo(input: string, cwd: string): Promise<SourceRepo> {
  const dir = path.resolve(cwd, input);
  let info;
  try {
    info = await stat(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw setupError(
      code === 'ENOENT' ? `repository directory ${dir} does not exist` : `cannot access ${dir} (${code})`,
      'give the path of a git checkout',
    );
  }
  if (!info.isDirectory()) throw setupError(`${dir} is not a directory`, 'give the path of a git checkout, not a file');
  try {
    await access(dir, constants.R_OK | constants.X_OK);
  } catch {
    throw setupError(
      `${dir} is not readable by this user`,
      'check the directory permissions (solve only needs to read it)',
    );
  }
  const top = await git(['rev-parse', '--show-toplevel'], dir);
  if (top.code !== 0) {
    const why = top.stderr.trim().split('\n').pop() ?? '';
    throw setupError(
      `${dir} is not a git repository${why ? ` (${why})` : ''}`,
      'solve needs a git checkout to diff against: run `git init && git add -A && git commit -m base` there first',
    );
  }
  const topDir = path.resolve(top.stdout.trim());
  if (topDir !== path.resolve(await realpath(dir))) {
    throw setupError(`${dir} is inside the git repository ${topDir}, not its top level`, `pass ${topDir} instead`);
  }
  const head = await git(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], dir);
  if (head.code !== 0)
    throw setupError(
      `the repository ${dir} has no commits yet`,
      "commit something first: solve diffs the model's work against HEAD",
    );
  const status = await git(['status', '--porcelain', '--untracked-files=all'], dir);
  const dirtyFiles = status.code === 0 ? status.stdout.split('\n').filter(Boolean).length : 0;
  return { dir: topDir, head: head.stdout.trim(), dirtyFiles };
}

/** A commit of the repository by any name git knows (`--base`), as its full id; a setup error when there is none. */
export async function resolveCommit(dir: string, rev: string): Promise<string> {
  // A leading '-' would read as an option of rev-parse.
  const r = rev.startsWith('-') ? undefined : await git(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`], dir);
  if (!r || r.code !== 0)
    throw setupError(`${JSON.stringify(rev)} is not a commit of ${dir}`, 'give a commit id, branch or tag with --base');
  return r.stdout.trim();
}
