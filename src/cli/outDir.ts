import { mkdir, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setupError, UsageError } from './exitCodes.js';

/** 2026-12-02T13:04:18.123Z -> 2026-12-02T13-04-18Z: sortable, and valid on every filesystem. */
export function timestampName(d = new Date()): string {
  return d
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The path with its longest existing prefix resolved through symlinks (a link into the repository counts as inside). */
async function realish(p: string): Promise<string> {
  let head = p;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(head), ...rest.reverse());
    } catch {
      const parent = path.dirname(head);
      if (parent === head) return p;
      rest.push(path.basename(head));
      head = parent;
    }
  }
}

/**
 * The directory solve writes patch and trajectory to (verify: its verdict). The source repository is never written to, so an
 * explicit --out inside it is refused, and the default ./frognano-out/<timestamp> moves to the temp dir
 * when solve is started from inside the repository. A default name already taken gets a -2, -3 ... suffix;
 * an explicit --out is used as it is.
 */
export async function prepareOutDir(opts: {
  out?: string;
  cwd: string;
  sourceDir: string;
  now?: Date;
  /** The command whose usage a refused --out prints. */
  command?: string;
}): Promise<{ dir: string; movedFromCwd: boolean }> {
  let base: string;
  let movedFromCwd = false;
  if (opts.out) {
    base = path.resolve(opts.cwd, opts.out);
    if (isInside(await realish(base), opts.sourceDir)) {
      throw new UsageError(
        `--out ${base} is inside the repository ${opts.sourceDir}; ${opts.command ?? 'solve'} never writes into the repository.`,
        opts.command ?? 'solve',
      );
    }
  } else {
    base = path.join(opts.cwd, 'frognano-out', timestampName(opts.now));
    if (isInside(await realish(base), opts.sourceDir)) {
      base = path.join(os.tmpdir(), 'frognano-out', timestampName(opts.now));
      movedFromCwd = true;
    }
  }
  try {
    if (opts.out) {
      // An explicit directory is used as it is (created if missing); earlier results in it are overwritten.
      await mkdir(base, { recursive: true });
      return { dir: base, movedFromCwd };
    }
    await mkdir(path.dirname(base), { recursive: true });
  } catch (err) {
    throw setupError(
      `cannot create the output directory ${base} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      'choose another place with --out DIR',
    );
  }
  for (let i = 1; i < 1000; i++) {
    const dir = i === 1 ? base : `${base}-${i}`;
    try {
      await mkdir(dir);
      return { dir, movedFromCwd };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  throw new Error(`could not create an output directory next to ${base}`);
}
