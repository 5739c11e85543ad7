import { promises as fs } from 'node:fs';
import { processAlive } from './processAlive.js';

/**
 * A lock across the processes of one machine: a file created with O_EXCL that holds the owner's pid. A lock whose
 * owner is gone (crashed runner) is taken over. Inside one process, callers queue on a promise chain first, so the
 * file is only ever contended between processes.
 */

const chains = new Map<string, Promise<void>>();

export class LockTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`timed out after ${Math.round(ms / 1000)}s waiting for the lock on ${what}`);
    this.name = 'LockTimeoutError';
  }
}

/** One try: true when the lock file is now ours (a stale one is removed and retried once). */
export async function tryLockFile(file: string): Promise<boolean> {
  for (let i = 0; i < 2; i++) {
    try {
      await fs.writeFile(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const owner = Number((await fs.readFile(file, 'utf8').catch(() => '')).trim());
    // An empty file is a lock being written this instant: not stale.
    if (!owner || processAlive(owner)) return false;
    await fs.rm(file, { force: true });
  }
  return false;
}

export async function unlockFile(file: string): Promise<void> {
  const owner = (await fs.readFile(file, 'utf8').catch(() => '')).trim();
  if (owner === String(process.pid)) await fs.rm(file, { force: true });
}

async function lockFile(file: string, what: string, timeoutMs: number, pollMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // Another process holds it; there is no event to await across processes, so poll with a deadline.
  while (!(await tryLockFile(file))) {
    if (Date.now() > deadline) throw new LockTimeoutError(what, timeoutMs);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Runs `fn` holding the lock `file` (in this process and across processes); `what` names it in a timeout. */
export async function withFileLock<T>(
  file: string,
  what: string,
  fn: () => Promise<T>,
  o: { timeoutMs?: number; pollMs?: number } = {},
): Promise<T> {
  const before = chains.get(file) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const chain = before.then(() => mine);
  chains.set(file, chain);
  try {
    await before;
    await lockFile(file, what, o.timeoutMs ?? 10 * 60_000, o.pollMs ?? 100);
    try {
      return await fn();
    } finally {
      await unlockFile(file);
    }
  } finally {
    release();
    if (chains.get(file) === chain) chains.delete(file);
  }
}
