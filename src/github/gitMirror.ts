import { promises as fs } from 'node:fs';
import path from 'node:path';
import { tryLockFile, unlockFile, withFileLock } from '../util/fileLock.js';
import { cloneFailed, cloneWith, git, GitError, remoteUrlFor, type CloneOptions, type CloneResult } from './git.js';

/**
 * A bare mirror per (installation, repository) on the runner, so a round's clone fetches only what changed.
 * The mirror is fetched with the job's own token (as `git()` passes it: the child's environment, never a remote
 * URL or config), so access is checked on every round; the job's clone is a local clone of the mirror (hardlinked
 * objects, no alternates: see localClone), so it owns its files and nothing of the mirror reaches a sandbox.
 * Layout: `<dir>/<installationId>/<owner>/<repo>.git`, a lock file beside each; mirrors are never shared across
 * installations.
 */

export interface GitMirrorCacheOptions {
  /** FROGNANO_GIT_CACHE_DIR. */
  dir: string;
  /** FROGNANO_GIT_CACHE_GB in bytes: least recently used mirrors are dropped past it. */
  maxBytes: number;
  /** How long a job waits for another job's fetch of the same repository. */
  lockTimeoutMs?: number;
}

export interface MirrorCloneOptions extends CloneOptions {
  installationId: number;
}

export type MirrorState = 'created' | 'updated' | 'recloned';

export interface MirrorCloneResult extends CloneResult {
  mirror: MirrorState;
  /** Where the time went (the runner logs it; bench/follow-up-start.ts reads it): the fetch and the job's clone. */
  timings: { fetchMs: number; cloneMs: number };
}

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const LAST_USED = 'frognano-last-used';
/** What git says when a mirror's objects or refs are damaged (as opposed to the remote refusing or being gone). */
const CORRUPT =
  /corrupt|bad object|missing (blob|tree|commit)|inflate|unable to read|did not send all necessary objects|broken link|index-pack|invalid object|loose object|packfile|not a git repository|unpack-objects|bad packed/i;

function checkName(what: string, v: string): string {
  if (!NAME.test(v) || v === '.' || v === '..') throw new GitError(`invalid ${what} for the git cache: ${v}`);
  return v;
}

export class GitMirrorCache {
  constructor(readonly o: GitMirrorCacheOptions) {}

  mirrorPath(installationId: number, owner: string, repo: string): string {
    if (!Number.isSafeInteger(installationId) || installationId <= 0) throw new GitError('invalid installation id');
    return path.join(this.o.dir, String(installationId), checkName('owner', owner), `${checkName('repo', repo)}.git`);
  }

  /** Like cloneRepo (same errors), through the mirror; drops and re-creates a corrupt mirror once. */
  async clone(o: MirrorCloneOptions): Promise<MirrorCloneResult> {
    const mirror = this.mirrorPath(o.installationId, o.owner, o.repo);
    await fs.mkdir(path.dirname(mirror), { recursive: true, mode: 0o700 });
    let result: MirrorCloneResult;
    try {
      result = await withFileLock(
        `${mirror}.lock`,
        `the git mirror of ${o.owner}/${o.repo}`,
        () => this.cloneLocked(mirror, o),
        { timeoutMs: this.o.lockTimeoutMs },
      );
    } catch (e) {
      throw await cloneFailed(o, e);
    }
    await this.evict(mirror).catch(() => undefined);
    return result;
  }

  private async cloneLocked(mirror: string, o: MirrorCloneOptions): Promise<MirrorCloneResult> {
    const existed = await isDir(mirror);
    try {
      const r = await updateAndClone(mirror, o);
      return { ...r, mirror: existed ? 'updated' : 'created' };
    } catch (e) {
      if (!existed || !(await isCorrupt(mirror, e))) throw e;
    }
    // The mirror is damaged: drop it and clone fresh; a second failure is the remote's (or the token's).
    await fs.rm(mirror, { recursive: true, force: true });
    await fs.rm(o.dest, { recursive: true, force: true });
    return { ...(await updateAndClone(mirror, o)), mirror: 'recloned' };
  }

  /** Drops least recently used mirrors (never `keep`, never one in use) until the cache fits its budget. */
  async evict(keep?: string): Promise<string[]> {
    const mirrors = await this.list();
    let total = mirrors.reduce((n, m) => n + m.bytes, 0);
    const dropped: string[] = [];
    for (const m of mirrors.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.o.maxBytes) break;
      if (m.dir === keep) continue;
      const lock = `${m.dir}.lock`;
      if (!(await tryLockFile(lock))) continue;
      try {
        await fs.rm(m.dir, { recursive: true, force: true });
      } finally {
        await unlockFile(lock);
      }
      total -= m.bytes;
      dropped.push(m.dir);
    }
    return dropped;
  }

  /** Every mirror in the cache with its size and last use (the cache's own layout, three levels deep). */
  async list(): Promise<{ dir: string; bytes: number; usedAt: number }[]> {
    const out: { dir: string; bytes: number; usedAt: number }[] = [];
    for (const inst of await subdirs(this.o.dir)) {
      for (const owner of await subdirs(inst)) {
        for (const dir of await subdirs(owner)) {
          if (!dir.endsWith('.git')) continue;
          const usedAt = (await fs.stat(path.join(dir, LAST_USED)).catch(() => fs.stat(dir))).mtimeMs;
          out.push({ dir, bytes: await treeBytes(dir), usedAt });
        }
      }
    }
    return out;
  }
}

async function updateAndClone(
  mirror: string,
  o: MirrorCloneOptions,
): Promise<CloneResult & Pick<MirrorCloneResult, 'timings'>> {
  const started = Date.now();
  const url = remoteUrlFor(o.auth.baseUrl, o.owner, o.repo);
  const common = { timeoutMs: o.timeoutMs, signal: o.signal };
  if (!(await isDir(mirror))) {
    await git(['init', '-q', '--bare', mirror], common);
    // The cache decides when a mirror goes; git's own gc would repack under a concurrent reader.
    await git(['config', 'gc.auto', '0'], { ...common, cwd: mirror });
  }
  await git(['fetch', '--quiet', '--prune', '--no-tags', '--', url, '+refs/heads/*:refs/heads/*'], {
    ...common,
    cwd: mirror,
    auth: o.auth,
  });
  await fs.writeFile(path.join(mirror, LAST_USED), new Date().toISOString());
  const fetched = Date.now();
  const r = o.branch
    ? await localClone(mirror, o, url, o.branch)
    : await cloneWith(o, ['--quiet', '--reference', mirror, '--dissociate']);
  return { ...r, timings: { fetchMs: fetched - started, cloneMs: Date.now() - fetched } };
}

/**
 * The job's clone of `branch`, made from the just-fetched mirror with `git clone --local`: the mirror's object files
 * are hardlinked (copied across filesystems), nothing is sent over the wire, and no `objects/info/alternates` points
 * into the cache (the clone owns its files, as with `--dissociate`). Hardlinks are safe because git never writes an
 * existing object or pack file in place: a fetch adds new packs and loose objects (written to a temporary name, then
 * renamed), and the mirror is never repacked (`gc.auto` 0; eviction deletes a mirror whole). The job's clone only adds
 * objects too, and the sandbox gets a copy (src/leaf/workspace.ts), never a link. `origin` is then the remote's URL
 * (without a token), as after a clone from the remote.
 */
async function localClone(mirror: string, o: MirrorCloneOptions, url: string, branch: string): Promise<CloneResult> {
  const common = { timeoutMs: o.timeoutMs, signal: o.signal };
  await fs.mkdir(path.dirname(o.dest), { recursive: true });
  await git(['clone', '--quiet', '--local', '--single-branch', '--no-tags', '--branch', branch, '--', mirror, o.dest], {
    ...common,
  });
  await git(['remote', 'set-url', 'origin', url], { ...common, cwd: o.dest });
  const headSha = (await git(['rev-parse', 'HEAD'], { ...common, cwd: o.dest })).trim();
  return { dir: o.dest, branch, headSha };
}

/** The failure came from the mirror: git said so, or the mirror no longer passes a connectivity check. */
async function isCorrupt(mirror: string, e: unknown): Promise<boolean> {
  const text = `${(e as Error)?.message ?? ''} ${(e as GitError)?.stderr ?? ''}`;
  if (CORRUPT.test(text)) return true;
  try {
    await git(['fsck', '--connectivity-only', '--no-progress', '--no-dangling'], { cwd: mirror });
    return false;
  } catch {
    return true;
  }
}

async function isDir(p: string): Promise<boolean> {
  return (await fs.lstat(p).catch(() => null))?.isDirectory() ?? false;
}

async function subdirs(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.filter((d) => d.isDirectory()).map((d) => path.join(dir, d.name));
}

/** Bytes under a mirror (git's own files; symlinks are not followed). */
async function treeBytes(dir: string): Promise<number> {
  let n = 0;
  for (const d of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) n += await treeBytes(p);
    else if (d.isFile()) n += (await fs.lstat(p).catch(() => ({ size: 0 }))).size;
  }
  return n;
}
