import { git } from './git.js';

/**
 * Reads one file of a pristine clone from git's object store at HEAD, never through the file system: a
 * symlink committed as `AGENTS.md` (or any name the repository chose) then cannot make the host read
 * `/etc/shadow`. Only regular files (mode 100644/100755) are read; the text is cut to `maxChars`.
 */
export interface RepoFile {
  path: string;
  text: string;
  /** Characters cut from the end (0 when the whole file fit). */
  truncatedChars: number;
}

/** Larger blobs are not even read: a repository instructions file is prose, not a data dump. */
const MAX_BLOB_BYTES = 1024 * 1024;

export async function readRepoFile(dir: string, relPath: string, maxChars: number): Promise<RepoFile | null> {
  // `--full-tree` + `--` + a literal path: the name is matched, never globbed or taken as an option.
  const listed =
    (await git(['ls-tree', '--full-tree', '-z', 'HEAD', '--', relPath], { cwd: dir })).split('\0')[0] ?? '';
  const m = /^(\d{6}) (\w+) ([0-9a-f]{40,64})\t(.*)$/s.exec(listed);
  if (!m || m[4] !== relPath) return null;
  const [, mode, type, oid] = m;
  if (type !== 'blob' || (mode !== '100644' && mode !== '100755')) return null;
  const size = Number((await git(['cat-file', '-s', oid!], { cwd: dir })).trim());
  if (!Number.isFinite(size) || size > MAX_BLOB_BYTES) {
    return { path: relPath, text: '', truncatedChars: Number.isFinite(size) ? size : 0 };
  }
  const text = await git(['cat-file', 'blob', oid!], { cwd: dir });
  if (text.includes('\0')) return null; // binary: nothing a model should read as instructions
  if (text.length <= maxChars) return { path: relPath, text, truncatedChars: 0 };
  return { path: relPath, text: text.slice(0, maxChars), truncatedChars: text.length - maxChars };
}
