import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { FileTooLargeError, SandboxPathError, type FileEntry, type ReadFileOptions } from './types.js';

const CHUNK_BYTES = 1024 * 1024;

/**
 * File operations on a repository that lives on the host (local and bwrap sandboxes, and the
 * bind-mounted workspace of the docker sandbox). Every path is resolved against the root and
 * refused when it, or a symlink on the way, leads outside it.
 */
export class HostFiles {
  readonly root: string;
  private realRoot: string | undefined;

  /**
   * `owner`: uid/gid given to every file and directory this writes, for sandboxes whose commands run as another
   * uid than the runner (a root runner writing into a workspace the sandbox user must be able to change).
   */
  constructor(root: string, private readonly owner?: { uid: number; gid: number }) {
    this.root = path.resolve(root);
  }

  private async rootReal(): Promise<string> {
    this.realRoot ??= await fs.realpath(this.root);
    return this.realRoot;
  }

  /** Resolves a repo-relative path (a leading '/' or the workdir prefix is tolerated) to an absolute host path. */
  async resolve(rel: string, workdirAlias?: string): Promise<string> {
    let p = rel.replace(/\\/g, '/');
    if (workdirAlias && (p === workdirAlias || p.startsWith(`${workdirAlias}/`))) p = p.slice(workdirAlias.length);
    p = p.replace(/^\/+/, '');
    const abs = path.resolve(this.root, p);
    const root = this.root;
    if (abs !== root && !abs.startsWith(root + path.sep)) {
      throw new SandboxPathError(`path ${rel} is outside the repository`);
    }
    // Follow symlinks of the existing part of the path and check again.
    const real = await this.realpathOfExisting(abs);
    const realRoot = await this.rootReal();
    if (real !== realRoot && !real.startsWith(realRoot + path.sep)) {
      throw new SandboxPathError(`path ${rel} leads outside the repository (symlink)`);
    }
    return abs;
  }

  /** Like resolve(), for a directory commands will run in: it must exist. */
  async resolveDir(rel: string, workdirAlias?: string): Promise<string> {
    const abs = await this.resolve(rel, workdirAlias);
    const st = await fs.stat(abs).catch(() => null);
    if (!st) throw new Error(`Directory not found: ${rel}`);
    if (!st.isDirectory()) throw new Error(`${rel} is not a directory`);
    return abs;
  }

  /** resolveDir(), as the path a command inside the sandbox sees it (the root is mounted at `workdir`). */
  async resolveDirInside(rel: string, workdir: string): Promise<string> {
    const inner = path.relative(this.root, await this.resolveDir(rel, workdir)).split(path.sep).join('/');
    return inner ? `${workdir}/${inner}` : workdir;
  }

  private async realpathOfExisting(abs: string): Promise<string> {
    let cur = abs;
    const rest: string[] = [];
    for (;;) {
      try {
        const real = await fs.realpath(cur);
        return rest.length ? path.join(real, ...rest.reverse()) : real;
      } catch {
        const parent = path.dirname(cur);
        if (parent === cur) return abs;
        rest.push(path.basename(cur));
        cur = parent;
      }
    }
  }

  async readFile(rel: string, workdirAlias?: string, opts: ReadFileOptions = {}): Promise<Buffer> {
    const fh = await this.openRegular(rel, workdirAlias);
    try {
      const { size } = await fh.stat();
      const max = opts.maxBytes ?? Infinity;
      if (size > max) throw new FileTooLargeError(rel, size, max);
      // Read in pieces up to the cap rather than trusting the size: the file may grow while it is read.
      const chunks: Buffer[] = [];
      let total = 0;
      for (;;) {
        // The expected remainder (+1 to see the end), at least 64 KiB should the file have grown, at most a chunk.
        const want = Math.min(CHUNK_BYTES, max - total + 1, Math.max(size - total, 64 * 1024) + 1);
        const { bytesRead, buffer } = await fh.read(Buffer.allocUnsafe(want), 0, want, null);
        if (bytesRead === 0) break;
        total += bytesRead;
        if (total > max) throw new FileTooLargeError(rel, total, max);
        chunks.push(bytesRead === want ? buffer : buffer.subarray(0, bytesRead));
      }
      return Buffer.concat(chunks, total);
    } finally {
      await fh.close();
    }
  }

  /** A stream of a regular file, for files too large to read whole (the stream closes the file when done). */
  async openFileStream(rel: string, workdirAlias?: string): Promise<Readable> {
    const fh = await this.openRegular(rel, workdirAlias);
    return fh.createReadStream({ highWaterMark: CHUNK_BYTES });
  }

  /**
   * Opens a file for reading after the path checks. Only regular files: reading a FIFO the model made with
   * mkfifo would block until the tool timeout, and a device could be endless.
   */
  private async openRegular(rel: string, workdirAlias?: string): Promise<fs.FileHandle> {
    const abs = await this.resolve(rel, workdirAlias);
    const st = await fs.stat(abs).catch(() => null);
    if (!st) throw new Error(`File not found: ${rel}`);
    if (st.isDirectory()) throw new Error(`${rel} is a directory, not a file`);
    if (!st.isFile()) throw new Error(`${rel} is not a regular file`);
    // O_NONBLOCK: should it have been swapped for a FIFO since the stat, opening still returns at once.
    const fh = await fs.open(abs, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const again = await fh.stat();
    if (!again.isFile()) {
      await fh.close();
      throw new Error(`${rel} is not a regular file`);
    }
    return fh;
  }

  async writeFile(rel: string, data: string | Buffer, workdirAlias?: string): Promise<void> {
    const abs = await this.resolve(rel, workdirAlias);
    if (abs === this.root) throw new SandboxPathError('cannot write to the repository root');
    // mkdir returns the first directory it had to create; everything from there down is new.
    const firstNew = await fs.mkdir(path.dirname(abs), { recursive: true });
    const st = await fs.lstat(abs).catch(() => null);
    if (st?.isDirectory()) throw new Error(`${rel} is a directory, not a file`);
    await fs.writeFile(abs, data);
    if (this.owner) {
      const { uid, gid } = this.owner;
      if (firstNew) {
        for (let d = path.dirname(abs); d.startsWith(firstNew); d = path.dirname(d)) {
          await fs.lchown(d, uid, gid);
          if (d === firstNew) break;
        }
      }
      await fs.lchown(abs, uid, gid);
    }
  }

  async listFiles(dir = '.', limit = 100_000, workdirAlias?: string): Promise<{ files: FileEntry[]; truncated: boolean }> {
    const start = await this.resolve(dir, workdirAlias);
    const st = await fs.stat(start).catch(() => null);
    if (!st) throw new Error(`Directory not found: ${dir}`);
    if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
    const files: FileEntry[] = [];
    let truncated = false;
    const walk = async (absDir: string): Promise<void> => {
      const entries = await fs.readdir(absDir, { withFileTypes: true });
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const e of entries) {
        if (truncated) return;
        if (e.name === '.git') continue;
        const abs = path.join(absDir, e.name);
        // Symlinks are listed as files but never followed (no escapes, no cycles).
        if (e.isDirectory()) await walk(abs);
        else if (e.isFile() || e.isSymbolicLink()) {
          if (files.length >= limit) {
            truncated = true;
            return;
          }
          const size = e.isFile() ? (await fs.stat(abs)).size : 0;
          files.push({ path: path.relative(this.root, abs).split(path.sep).join('/'), size });
        }
      }
    };
    await walk(start);
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { files, truncated };
  }
}
