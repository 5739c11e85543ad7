import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ObjectStore } from './objectStore.js';

/**
 * Objects as files under one directory: the default, for an app and runners on the same machine (or sharing a
 * volume). Writes go to a temporary name and are renamed, so a reader never sees half a file. Only the owner may
 * read them (trajectories hold the repository's code).
 */
export class LocalObjectStore implements ObjectStore {
  readonly description: string;
  readonly sweepsItself = true;

  constructor(private readonly root: string) {
    this.description = `directory ${root}`;
  }

  private file(key: string): string {
    const full = path.resolve(this.root, key);
    if (!full.startsWith(path.resolve(this.root) + path.sep)) throw new Error(`key outside the store: ${key}`);
    return full;
  }

  async put(key: string, body: string): Promise<void> {
    const file = this.file(key);
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(tmp, body, { mode: 0o600 });
    await rename(tmp, file);
  }

  async get(key: string): Promise<string | null> {
    try {
      return await readFile(this.file(key), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async list(prefix: string): Promise<string[]> {
    // The prefix names a folder (keys are path-like); list the files in it and below.
    const dir = path.dirname(this.file(`${prefix}x`));
    const out: string[] = [];
    for (const f of await walk(dir)) {
      const key = path.relative(this.root, f).split(path.sep).join('/');
      if (key.startsWith(prefix) && !key.endsWith('.tmp')) out.push(key);
    }
    return out;
  }

  async deleteOlderThan(cutoff: Date): Promise<number> {
    let removed = 0;
    for (const f of await walk(this.root)) {
      const s = await stat(f).catch(() => null);
      if (s && s.mtime < cutoff) {
        await rm(f, { force: true });
        removed++;
      }
    }
    await removeEmptyDirs(this.root, true);
    return removed;
  }
}

async function walk(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: string[] = [];
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(full)));
    else if (e.isFile()) out.push(full);
  }
  return out;
}

async function removeEmptyDirs(dir: string, keep: boolean): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await removeEmptyDirs(path.join(dir, e.name), false);
  if (!keep) await rmdir(dir).catch(() => undefined); // fails while not empty, as it should
}
