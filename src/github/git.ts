import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseNumstat } from '../leaf/patch.js';
import { runProcess } from '../sandbox/process.js';
import { redact, registerSecret } from '../util/redact.js';

/**
 * Host-side git: clone, apply the sandbox's patch, commit as the bot, push. Runs only on PRISTINE
 * clones the model never touched (a model-written .git/config or hook could otherwise run code on the host).
 * The installation token travels only in the child's environment (GIT_CONFIG_COUNT/KEY/VALUE), never in
 * argv (visible in `ps` and logs) and never in .git/config; every message is redacted.
 */

export const DEFAULT_GIT_BASE_URL = 'https://github.com';
export const DEFAULT_GIT_TIMEOUT_MS = 5 * 60_000;

export class GitError extends Error {
  constructor(
    message: string,
    readonly stderr = '',
  ) {
    super(redact(message));
    this.name = 'GitError';
  }
}

export interface GitAuth {
  /** Installation token; sent as an HTTP Basic `x-access-token` header scoped to `baseUrl`. */
  token?: string;
  /** Remote base URL (`https://github.com`, a GHES host, or `file:///tmp/remotes` in tests). */
  baseUrl: string;
}

export interface GitRunOptions {
  cwd?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  auth?: GitAuth;
  stdin?: string;
  /** Extra `-c key=value` settings (never secrets: argv is visible to other processes). */
  config?: Record<string, string>;
}

export function remoteUrlFor(baseUrl: string, owner: string, repo: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${owner}/${repo}.git`;
}

/** Environment of every host git process: nothing inherited, no user/system config, no prompts, no hooks. */
function gitEnv(auth?: GitAuth): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: os.tmpdir(),
    LANG: 'C.UTF-8',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
  };
  const pairs: [string, string][] = [['core.hooksPath', '/dev/null']];
  if (auth?.token) {
    registerSecret(auth.token);
    const basic = Buffer.from(`x-access-token:${auth.token}`).toString('base64');
    registerSecret(basic);
    // Scoped to the remote's base URL so the header is never sent to any other host.
    pairs.push([`http.${auth.baseUrl.replace(/\/+$/, '')}/.extraheader`, `AUTHORIZATION: basic ${basic}`]);
  }
  env.GIT_CONFIG_COUNT = String(pairs.length);
  pairs.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

/** Runs one git command with a hard timeout; throws GitError (redacted) on failure, returns stdout. */
export async function git(args: string[], opts: GitRunOptions = {}): Promise<string> {
  const argv = ['git'];
  for (const [k, v] of Object.entries(opts.config ?? {})) argv.push('-c', `${k}=${v}`);
  argv.push(...args);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_GIT_TIMEOUT_MS;
  let res;
  try {
    res = await runProcess(argv, {
      cwd: opts.cwd,
      env: gitEnv(opts.auth),
      timeoutMs,
      signal: opts.signal,
      stdin: opts.stdin,
      maxOutputBytes: 16 * 1024 * 1024,
    });
  } catch (e) {
    throw new GitError(`git ${args[0]} could not start: ${(e as Error).message}`);
  }
  if (res.timedOut) throw new GitError(`git ${args[0]} timed out after ${Math.round(timeoutMs / 1000)}s`);
  if (res.cancelled) throw new GitError(`git ${args[0]} was cancelled`);
  if (res.exitCode !== 0) {
    const detail = lastLines(res.stderr || res.stdout, 6);
    throw new GitError(`git ${args[0]} failed (exit ${res.exitCode}): ${detail}`, redact(res.stderr));
  }
  return res.stdout;
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join(' | ') || 'no output';
}

export interface CloneOptions {
  owner: string;
  repo: string;
  auth: GitAuth;
  /** Directory to create; must not exist yet. */
  dest: string;
  /** Branch to check out; the remote's default branch when omitted. */
  branch?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface CloneResult {
  dir: string;
  branch: string;
  headSha: string;
}

/** Shallow clone (`--depth 1`) of one branch. Errors read "could not clone owner/repo: ...". */
export async function cloneRepo(o: CloneOptions): Promise<CloneResult> {
  try {
    return await cloneWith(o, ['--depth', '1']);
  } catch (e) {
    throw await cloneFailed(o, e);
  }
}

/** `git clone` of one branch with `extra` options (shallow, or through a mirror), and what it checked out. */
export async function cloneWith(o: CloneOptions, extra: string[]): Promise<CloneResult> {
  const url = remoteUrlFor(o.auth.baseUrl, o.owner, o.repo);
  const common = { timeoutMs: o.timeoutMs, signal: o.signal };
  await fs.mkdir(path.dirname(o.dest), { recursive: true });
  const args = ['clone', ...extra, '--single-branch', '--no-tags'];
  if (o.branch) args.push('--branch', o.branch);
  args.push('--', url, o.dest);
  await git(args, { ...common, auth: o.auth });
  const branch = (await git(['rev-parse', '--abbrev-ref', 'HEAD'], { ...common, cwd: o.dest })).trim();
  const headSha = (await git(['rev-parse', 'HEAD'], { ...common, cwd: o.dest })).trim();
  return { dir: o.dest, branch, headSha };
}

/** The error a failed clone reads as ("could not clone owner/repo (branch b): ..."), the partial clone removed. */
export async function cloneFailed(o: CloneOptions, e: unknown): Promise<GitError> {
  await fs.rm(o.dest, { recursive: true, force: true }).catch(() => undefined);
  const msg = e instanceof Error ? e.message : String(e);
  return new GitError(`could not clone ${o.owner}/${o.repo}${o.branch ? ` (branch ${o.branch})` : ''}: ${msg}`);
}

export interface NumstatEntry {
  path: string;
  additions: number;
  deletions: number;
  binary: boolean;
}

/**
 * Applies a patch (from `git diff --binary` in the sandbox) to the index and tree of a pristine clone.
 * `git apply` itself refuses paths outside the tree and into `.git`.
 */
export async function applyPatch(dir: string, patch: string, opts: { timeoutMs?: number } = {}): Promise<void> {
  const text = patch.endsWith('\n') ? patch : `${patch}\n`;
  try {
    await git(['apply', '--index', '--binary', '--whitespace=nowarn', '-'], {
      cwd: dir,
      stdin: text,
      timeoutMs: opts.timeoutMs,
    });
  } catch (e) {
    throw new GitError(`the patch from the sandbox does not apply to the base branch: ${(e as Error).message}`);
  }
}

/** What is staged relative to HEAD, per file, as the host sees it (trusted, unlike the sandbox's own count). */
export async function stagedNumstat(dir: string): Promise<NumstatEntry[]> {
  return parseNumstat(await git(['diff', '--cached', '--numstat', '-z', '--no-renames', 'HEAD'], { cwd: dir }));
}

export interface Identity {
  name: string;
  email: string;
}

export const DEFAULT_BOT_IDENTITY: Identity = {
  name: 'frognano[bot]',
  email: 'frognano[bot]@users.noreply.github.com',
};

/** Creates `branch` at HEAD and commits what is staged as the bot; returns the new commit sha. */
export async function commitStaged(
  dir: string,
  o: { branch: string; message: string; identity: Identity },
): Promise<string> {
  await git(['checkout', '-q', '-b', o.branch], { cwd: dir });
  const config = {
    'user.name': o.identity.name,
    'user.email': o.identity.email,
    'commit.gpgsign': 'false',
  };
  await git(['commit', '-q', '--no-verify', '-F', '-'], { cwd: dir, stdin: o.message, config });
  return (await git(['rev-parse', 'HEAD'], { cwd: dir })).trim();
}

/**
 * Pushes HEAD to `refs/heads/<branch>` of the remote. `force` is for the bot's own branch of the same
 * attempt (a job that was handed back and ran again); it never touches other branches.
 */
export async function pushBranch(
  dir: string,
  o: {
    owner: string;
    repo: string;
    branch: string;
    auth: GitAuth;
    force?: boolean;
    timeoutMs?: number;
    signal?: AbortSignal;
  },
): Promise<void> {
  const url = remoteUrlFor(o.auth.baseUrl, o.owner, o.repo);
  const args = ['push', '--quiet', '--no-verify'];
  if (o.force) args.push('--force');
  args.push('--', url, `HEAD:refs/heads/${o.branch}`);
  try {
    await git(args, { cwd: dir, auth: o.auth, timeoutMs: o.timeoutMs, signal: o.signal });
  } catch (e) {
    throw new GitError(`could not push branch ${o.branch} to ${o.owner}/${o.repo}: ${(e as Error).message}`);
  }
}

/** Every branch the runner pushes starts with this; the approval gate (src/app/review.ts) acts only on such branches. */
export const BOT_BRANCH_PREFIX = 'frognano/';

/** `frognano/issue-12`, or `frognano/issue-12-attempt-3` for retries. */
export function branchNameFor(issueNumber: number, attempt: number): string {
  const name = `${BOT_BRANCH_PREFIX}issue-${issueNumber}`;
  return attempt > 1 ? `${name}-attempt-${attempt}` : name;
}

/** Commits what is staged on the branch checked out now (a follow-up round builds on the PR's head). */
export async function commitStagedOnHead(dir: string, o: { message: string; identity: Identity }): Promise<string> {
  const config = { 'user.name': o.identity.name, 'user.email': o.identity.email, 'commit.gpgsign': 'false' };
  await git(['commit', '-q', '--no-verify', '-F', '-'], { cwd: dir, stdin: o.message, config });
  return (await git(['rev-parse', 'HEAD'], { cwd: dir })).trim();
}

/** A push refused because the branch moved on the remote (someone pushed meanwhile). */
export function isNonFastForward(e: unknown): boolean {
  const text = `${(e as Error)?.message ?? ''} ${(e as GitError)?.stderr ?? ''}`;
  return /non-fast-forward|fetch first|\[rejected\]|stale info|Updates were rejected/i.test(text);
}
