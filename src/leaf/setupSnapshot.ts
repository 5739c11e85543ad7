import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import picomatch from 'picomatch';
import type { Sandbox } from '../sandbox/types.js';
import { tryLockFile, unlockFile } from '../util/fileLock.js';
import { hostGit } from './workspace.js';

/**
 * Set-up snapshots (docs/warm-starts.md): what a repository's set-up commands left in the workspace (its untracked
 * and ignored files: `.venv/`, `node_modules/` …), archived INSIDE the sandbox right after the set-up succeeded and
 * before the model ran, streamed out as opaque bytes to one file on the host, and streamed into a later round's fresh
 * sandbox, where the sandbox user extracts it. The host never lists, opens or extracts a path from an archive.
 * Layout: `<dir>/<installation id>/<owner>/<repo>/<key>.tgz` (a first attempt's, on the base branch), and
 * `<dir>/<installation id>/<owner>/<repo>/pull-<n>.<key>.tgz` (a follow-up round's, which only later rounds of pull
 * request n restore): never shared across repositories or installations.
 * A file is a 128-byte header (format version, the archive's sha256 and length) and the gzipped tar: a file that does
 * not match its header (truncated, altered, an older format) is deleted and the set-up runs instead.
 */

export interface SetupSnapshotCacheOptions {
  /** FROGNANO_SETUP_CACHE_DIR. */
  dir: string;
  /** FROGNANO_SETUP_CACHE_GB in bytes: least recently used snapshots are dropped past it. */
  maxBytes: number;
  /** FROGNANO_SETUP_CACHE_MAX_MB in bytes: a bigger archive is not stored. */
  maxSnapshotBytes: number;
}

export type CaptureResult = { stored: true; bytes: number } | { stored: false; reason: string };
export type RestoreResult = { restored: true; bytes: number } | { restored: false; reason: string };

/**
 * Which snapshots a round shares: `undefined`, the repository's (stored by first attempts on the base branch); or
 * `pull-<n>`, pull request n's own (stored by its follow-up rounds, restored only by its later rounds).
 */
export type SnapshotScope = `pull-${number}` | undefined;

interface SandboxStep {
  timeoutMs: number;
  signal?: AbortSignal;
}

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const KEY = /^[0-9a-f]{64}$/;
const SCOPE = /^pull-[1-9][0-9]{0,9}$/;
/** The file's header: format, the archive's sha256 and length, padded with spaces to HEADER_BYTES (last byte \n). */
const HEADER_BYTES = 128;
const FORMAT = 'frognano-setup-snapshot 2';
const HEADER = /^frognano-setup-snapshot 2 sha256=([0-9a-f]{64}) bytes=([0-9]{1,15}) *\n$/;
/** A temp file older than this belongs to a capture that died (a crashed runner): eviction removes it. */
const STALE_TMP_MS = 6 * 3600_000;

/** git in the sandbox by its absolute path, without any config the workspace could bring (as src/leaf/patch.ts). */
const GIT = "/usr/bin/git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c 'safe.directory=*'";
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_ATTR_NOSYSTEM: '1', LC_ALL: 'C' };

/**
 * The archive, made in the clean shell: tracked files the set-up changed cannot be carried by it (exit 3: no
 * snapshot); every untracked and ignored file (`--others` without `--exclude-standard`; a nested repository whole)
 * goes into a tar gzipped at level 1 (a venv or node_modules compresses nearly as well, several times faster) on stdout (names verbatim: one starting with `-` is never an option), cut at `cap` bytes by
 * head so an oversized set-up stops early instead of being read to the end.
 */
function captureCommand(cap: number): string {
  return (
    `set -o pipefail; ${GIT} diff --quiet HEAD -- || exit 3; ` +
    `${GIT} ls-files --others -z | tar --null --verbatim-files-from -T - -cf - | gzip -1 | head -c ${cap}`
  );
}

/** Extracts as the sandbox user; files and directories already there (the patch's, on a verification side) are kept. */
const EXTRACT_COMMAND = 'tar -xzf - --no-same-owner --skip-old-files';

function checkName(what: string, v: string): string {
  if (!NAME.test(v) || v === '.' || v === '..') throw new Error(`invalid ${what} for the set-up cache: ${v}`);
  return v;
}

export class SetupSnapshotCache {
  constructor(readonly o: SetupSnapshotCacheOptions) {}

  /** `repository` is `<installation id>/<owner>/<repo>` (VerifyOptions.repository). */
  fileFor(repository: string, key: string, scope?: SnapshotScope): string {
    const parts = repository.split('/');
    if (parts.length !== 3 || !/^[1-9][0-9]{0,15}$/.test(parts[0]))
      throw new Error('the set-up cache needs <installation id>/<owner>/<repo>');
    if (!KEY.test(key)) throw new Error('invalid set-up snapshot key');
    if (scope !== undefined && !SCOPE.test(scope)) throw new Error('invalid set-up snapshot scope');
    const name = scope ? `${scope}.${key}.tgz` : `${key}.tgz`;
    return path.join(this.o.dir, parts[0], checkName('owner', parts[1]), checkName('repo', parts[2]), name);
  }

  /**
   * Archives the workspace's untracked and ignored files inside `sandbox` into the cache under `key`. Call it only
   * right after the set-up succeeded, before the model touched the workspace.
   */
  async capture(
    sandbox: Sandbox,
    repository: string,
    key: string,
    o: SandboxStep & { scope?: SnapshotScope },
  ): Promise<CaptureResult> {
    const file = this.fileFor(repository, key, o.scope);
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    // The archive goes after the header's room; the header is written once the archive is complete.
    const sink = createWriteStream(tmp, { flags: 'wx', mode: 0o600, start: HEADER_BYTES });
    const done = finished(sink);
    // Awaited below; a capture that throws first destroys the sink, and that rejection must not go unhandled.
    done.catch(() => undefined);
    const cap = this.o.maxSnapshotBytes;
    let reason: string | undefined;
    try {
      const r = await sandbox.exec(captureCommand(cap + 1), {
        clean: true,
        env: GIT_ENV,
        stdoutSink: sink,
        maxOutputBytes: cap + 1,
        timeoutMs: o.timeoutMs,
        signal: o.signal,
      });
      sink.end();
      await done;
      const bytes = (await fs.stat(tmp)).size - HEADER_BYTES;
      if (r.timedOut || r.cancelled) reason = 'archiving timed out or was cancelled';
      else if (bytes > cap || r.stdoutTruncated > 0) reason = `larger than ${Math.round(cap / 1024 ** 2)} MB`;
      else if (r.exitCode === 3) reason = 'the set-up changed tracked files, which a snapshot does not carry';
      else if (r.exitCode !== 0) reason = `archiving failed (exit ${r.exitCode}): ${r.stderr.trim().slice(0, 200)}`;
      else {
        await writeHeader(tmp, bytes);
        await fs.rename(tmp, file);
        await this.evict(file).catch(() => undefined);
        return { stored: true, bytes };
      }
      return { stored: false, reason };
    } finally {
      sink.destroy();
      await fs.rm(tmp, { force: true });
    }
  }

  /**
   * Streams the snapshot `key` of `scope` into `sandbox` and extracts it there, after checking the file against its
   * header (length and sha256 of the archive). A file that fails the check is deleted, so a later round stores a
   * fresh one.
   */
  async restore(
    sandbox: Sandbox,
    repository: string,
    key: string,
    o: SandboxStep & { scope?: SnapshotScope },
  ): Promise<RestoreResult> {
    const file = this.fileFor(repository, key, o.scope);
    let fh: fs.FileHandle;
    try {
      // O_NOFOLLOW: the cache holds regular files the bot wrote; anything else is not read.
      fh = await fs.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch {
      return { restored: false, reason: 'no snapshot' };
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) return { restored: false, reason: 'not a regular file' };
      // An evicted file stays readable through the open handle: no lock is needed to read it. The handle (closed
      // below) outlives the streams, and closing it waits for a read still in flight when tar stopped early.
      const damage = await checkHeader(fh, st.size);
      if (damage) {
        await fs.rm(file, { force: true });
        return { restored: false, reason: `the snapshot is damaged: ${damage}` };
      }
      const x = await sandbox.exec(EXTRACT_COMMAND, {
        clean: true,
        stdinStream: fh.createReadStream({ start: HEADER_BYTES, autoClose: false }),
        maxOutputBytes: 64 * 1024,
        timeoutMs: o.timeoutMs,
        signal: o.signal,
      });
      if (x.exitCode !== 0) return { restored: false, reason: `extracting failed: ${firstLine(x.stderr, x)}` };
      const now = new Date();
      await fs.utimes(file, now, now).catch(() => undefined);
      return { restored: true, bytes: st.size };
    } finally {
      await fh.close();
    }
  }

  /**
   * Drops least recently used snapshots (by mtime, which a restore refreshes; never `keep`) until the cache fits
   * its budget. One evictor at a time across the machine's runners; a busy lock means another one is at it.
   */
  async evict(keep?: string): Promise<string[]> {
    await fs.mkdir(this.o.dir, { recursive: true, mode: 0o700 });
    const lock = path.join(this.o.dir, '.evict.lock');
    if (!(await tryLockFile(lock))) return [];
    try {
      const files = await this.list();
      let total = files.reduce((n, f) => n + f.bytes, 0);
      const dropped: string[] = [];
      for (const f of files.sort((a, b) => a.usedAt - b.usedAt)) {
        const staleTmp = f.file.endsWith('.tmp') && Date.now() - f.usedAt > STALE_TMP_MS;
        if (!staleTmp && (total <= this.o.maxBytes || f.file === keep || f.file.endsWith('.tmp'))) continue;
        await fs.rm(f.file, { force: true });
        total -= f.bytes;
        dropped.push(f.file);
      }
      return dropped;
    } finally {
      await unlockFile(lock);
    }
  }

  /** Every file in the cache's own layout (three directory levels, then files), with size and last use. */
  async list(): Promise<{ file: string; bytes: number; usedAt: number }[]> {
    const out: { file: string; bytes: number; usedAt: number }[] = [];
    for (const inst of await entries(this.o.dir, 'dir')) {
      for (const owner of await entries(inst, 'dir')) {
        for (const repo of await entries(owner, 'dir')) {
          for (const file of await entries(repo, 'file')) {
            const st = await fs.lstat(file).catch(() => null);
            if (st) out.push({ file, bytes: st.size, usedAt: st.mtimeMs });
          }
        }
      }
    }
    return out;
  }
}

/** Writes the header of a complete archive file (the archive itself starts at HEADER_BYTES). */
async function writeHeader(file: string, bytes: number): Promise<void> {
  const fh = await fs.open(file, 'r+');
  try {
    const sha = await sha256Of(fh, bytes);
    const text = `${FORMAT} sha256=${sha} bytes=${bytes}`;
    await fh.write(Buffer.from(`${text.padEnd(HEADER_BYTES - 1)}\n`), 0, HEADER_BYTES, 0);
  } finally {
    await fh.close();
  }
}

/** What is wrong with a snapshot file of `size` bytes, checked against its header; undefined when nothing is. */
async function checkHeader(fh: fs.FileHandle, size: number): Promise<string | undefined> {
  const head = Buffer.alloc(HEADER_BYTES);
  const { bytesRead } = await fh.read(head, 0, HEADER_BYTES, 0);
  const m = HEADER.exec(head.subarray(0, bytesRead).toString('latin1'));
  if (bytesRead < HEADER_BYTES || !m) return 'no header of this format (an older format, or not a snapshot)';
  const bytes = Number(m[2]);
  if (size !== HEADER_BYTES + bytes) return `${size - HEADER_BYTES} bytes where the header says ${bytes}`;
  if ((await sha256Of(fh, bytes)) !== m[1]) return 'the archive does not match its sha256';
  return undefined;
}

/** sha256 of the archive part of an open snapshot file. */
async function sha256Of(fh: fs.FileHandle, bytes: number): Promise<string> {
  const h = createHash('sha256');
  if (bytes > 0)
    for await (const chunk of fh.createReadStream({ start: HEADER_BYTES, autoClose: false })) h.update(chunk);
  return h.digest('hex');
}

function firstLine(stderr: string, r: { timedOut: boolean; cancelled: boolean; exitCode: number | null }): string {
  if (r.timedOut || r.cancelled) return 'timed out or cancelled';
  return stderr.trim().split('\n')[0]?.slice(0, 200) || `exit ${r.exitCode}`;
}

async function entries(dir: string, kind: 'dir' | 'file'): Promise<string[]> {
  const list = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  return list.filter((d) => (kind === 'dir' ? d.isDirectory() : d.isFile())).map((d) => path.join(dir, d.name));
}

/**
 * Dependency files whose content decides what a set-up produces, at any depth (picomatch globs; the same patterns
 * tell whether a patch touches one).
 */
export const DEFAULT_KEY_FILES = [
  'requirements*.txt',
  'requirements/*.txt',
  'pyproject.toml',
  'setup.cfg',
  'setup.py',
  'poetry.lock',
  'uv.lock',
  'pdm.lock',
  'Pipfile',
  'Pipfile.lock',
  'environment.yml',
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'pnpm-workspace.yaml',
  'yarn.lock',
  '.yarnrc.yml',
  '.npmrc',
  '.nvmrc',
  '.python-version',
  '.tool-versions',
  'go.mod',
  'go.sum',
  'Cargo.toml',
  'Cargo.lock',
  'rust-toolchain.toml',
  'Gemfile',
  'Gemfile.lock',
  'composer.json',
  'composer.lock',
  'mix.exs',
  'mix.lock',
  'build.gradle',
  'build.gradle.kts',
  'pom.xml',
].map((name) => `**/${name}`);

/** Cap on the tree's listing (about 100 bytes a file): a larger tree gets no snapshot rather than a partial key. */
const MAX_LISTING_BYTES = 64 * 1024 * 1024;

/** The key files among repository paths (`dot`: `.npmrc`, `.python-version`). */
export function keyFileMatcher(globs: string[]): (path: string) => boolean {
  return picomatch(globs, { dot: true });
}

export interface SetupKeyInput {
  /** The runner's pristine clone (a host path the bot made), read at `commit` from git's objects only. */
  repoDir: string;
  commit: string;
  /** `<installation id>/<owner>/<repo>`. */
  repository: string;
  setupCommands: string[];
  /** The repository's `setup.network` as configured (JSON): what the set-up may download. */
  network: string;
  /** The sandbox image or kind (VerifyOptions.environmentKey). */
  environment: string;
  /** The repository's own `setup.cacheKeyFiles` globs, on top of DEFAULT_KEY_FILES. */
  keyFiles: string[];
}

/**
 * sha256 over the repository, the set-up commands, its network setting, the sandbox image and every key file at
 * `commit`. A key file is named by its blob id from `git ls-tree` (a hash of its content): the host reads git's
 * object database, never a path in a working tree, so a symlink (named by its own blob, the link's target text) or a
 * changed working tree cannot redirect it.
 */
export async function setupSnapshotKey(k: SetupKeyInput): Promise<string> {
  if (!/^[0-9a-f]{40,64}$/.test(k.commit)) throw new Error('the set-up key needs a commit id');
  const home = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-setup-key-'));
  try {
    // The whole tree's listing (modes, blob ids, paths; no content), filtered here with the same matcher that
    // tells whether a patch touches a key file.
    const r = await hostGit(['ls-tree', '-r', '-z', '--full-tree', k.commit], k.repoDir, home, {
      maxOutputBytes: MAX_LISTING_BYTES,
    });
    if (r.code !== 0) throw new Error(`cannot list the key files: ${r.stderr.trim().slice(0, 200)}`);
    if (r.truncated) throw new Error('the tree is too large to key a set-up snapshot on');
    const isKey = keyFileMatcher([...DEFAULT_KEY_FILES, ...k.keyFiles]);
    // An entry is `<mode> <type> <oid>\t<path>`.
    const listing = r.stdout
      .split('\0')
      .filter((e) => e && isKey(e.slice(e.indexOf('\t') + 1)))
      .sort();
    const h = createHash('sha256');
    for (const part of [
      'frognano-setup-snapshot-v2',
      k.repository,
      JSON.stringify(k.setupCommands),
      k.network,
      k.environment,
      JSON.stringify([...k.keyFiles].sort()),
      ...listing,
    ])
      h.update(`${part.length}:${part}\0`);
    return h.digest('hex');
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}
