import type { Readable } from 'node:stream';
import type { HostFiles } from './hostFiles.js';
import type { FileEntry, ReadFileOptions } from './types.js';

/**
 * The file half of every sandbox whose workspace lives on the host (local, bwrap, and docker's bind mount):
 * paths are checked by HostFiles, and the sandbox's own `workdir` is accepted as a path prefix because the
 * model sees absolute paths as they are inside the sandbox.
 */
export abstract class HostFilesSandbox {
  abstract readonly workdir: string;
  protected abstract readonly files: HostFiles;

  /** Throws when the sandbox may no longer change the workspace (closed, or past its job time limit). */
  protected assertUsable(): void {}

  readFile(p: string, options?: ReadFileOptions): Promise<Buffer> {
    return this.files.readFile(p, this.workdir, options);
  }

  openFileStream(p: string): Promise<Readable> {
    return this.files.openFileStream(p, this.workdir);
  }

  async writeFile(p: string, data: string | Buffer): Promise<void> {
    this.assertUsable();
    await this.files.writeFile(p, data, this.workdir);
  }

  listFiles(dir?: string, limit?: number): Promise<{ files: FileEntry[]; truncated: boolean }> {
    return this.files.listFiles(dir, limit, this.workdir);
  }
}
