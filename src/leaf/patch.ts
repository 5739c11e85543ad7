import type { Sandbox } from '../sandbox/types.js';

/**
 * The patch is computed INSIDE the sandbox: the model could have written anything into .git/config
 * (a core.fsmonitor or diff driver command, say), and running git on the host over that tree would
 * run its code there.
 */

/** Larger patches are refused rather than cut: a truncated patch does not apply. */
export const MAX_PATCH_BYTES = 50 * 1024 * 1024;

export interface ChangedFile {
  path: string;
  additions: number;
  deletions: number;
  binary: boolean;
}

/**
 * git with the settings that change the diff's form pinned, so `git apply` on the host always works. By its absolute
 * path, in a clean shell (ExecOptions.clean), with no system or global config or attributes (GIT_ENV): only the
 * workspace's own .git counts, so a shim or config the model left in HOME cannot change the patch.
 */
const GIT =
  "/usr/bin/git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c 'safe.directory=*' -c core.quotePath=false -c diff.noprefix=false";

const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_ATTR_NOSYSTEM: '1' };

function assertSha(sha: string): void {
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new Error(`invalid base commit ${JSON.stringify(sha)}`);
}

async function git(sandbox: Sandbox, command: string, signal?: AbortSignal): Promise<string> {
  const r = await sandbox.exec(command, {
    timeoutMs: 300_000,
    signal,
    maxOutputBytes: MAX_PATCH_BYTES,
    clean: true,
    env: GIT_ENV,
  });
  if (r.timedOut) throw new Error(`computing the patch timed out (${command.split(' ').slice(-4).join(' ')})`);
  if (r.cancelled) throw new Error('computing the patch was cancelled');
  if (r.exitCode !== 0)
    throw new Error(`git failed in the sandbox (exit ${r.exitCode}): ${r.stderr.trim().slice(0, 2000)}`);
  if (r.stdoutTruncated > 0)
    throw new Error(`the patch is larger than ${MAX_PATCH_BYTES / 1024 / 1024} MB; refusing to use a cut-off patch`);
  return r.stdout;
}

/**
 * Byproducts of running a project's tests and installs, left out of the patch when the repository does not ignore
 * them itself (a repository without a .gitignore would otherwise get `__pycache__/*.pyc` in its pull request).
 * They act like `.git/info/exclude`: only untracked files are skipped, so a change to a tracked file still counts.
 */
export const PATCH_EXCLUDES = [
  '__pycache__/',
  '*.py[cod]',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.hypothesis/',
  '*.egg-info/',
  '.tox/',
  '.nox/',
  'node_modules/',
];

/**
 * Stages everything (new files included; files ignored by the repository or by PATCH_EXCLUDES not) and diffs it
 * against the base commit. The exclude list goes to git through a file made in the sandbox's /tmp for this
 * command, so the repository's own files are untouched.
 */
export async function computePatch(
  sandbox: Sandbox,
  baseCommit: string,
  signal?: AbortSignal,
): Promise<{ patch: string; changedFiles: ChangedFile[] }> {
  assertSha(baseCommit);
  const diffOpts = '--cached --no-color --no-ext-diff --no-textconv --src-prefix=a/ --dst-prefix=b/';
  const excludes = PATCH_EXCLUDES.map((p) => `'${p}'`).join(' ');
  await git(
    sandbox,
    `x=$(mktemp) && printf '%s\\n' ${excludes} >"$x" && ${GIT} -c core.excludesFile="$x" add -A; rc=$?; rm -f "$x"; exit $rc`,
    signal,
  );
  const patch = await git(sandbox, `${GIT} diff ${diffOpts} --binary --full-index ${baseCommit} --`, signal);
  const numstat = await git(sandbox, `${GIT} diff ${diffOpts} --no-renames --numstat -z ${baseCommit} --`, signal);
  return { patch, changedFiles: parseNumstat(numstat) };
}

/** `git diff --numstat -z --no-renames` output, one entry per file (binary files count no lines). */
export function parseNumstat(out: string): ChangedFile[] {
  const files: ChangedFile[] = [];
  for (const rec of out.split('\0')) {
    const m = /^(\d+|-)\t(\d+|-)\t(.+)$/s.exec(rec);
    if (!m) continue;
    const binary = m[1] === '-';
    files.push({ path: m[3], additions: binary ? 0 : Number(m[1]), deletions: binary ? 0 : Number(m[2]), binary });
  }
  return files;
}
