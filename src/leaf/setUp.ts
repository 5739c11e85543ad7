import type { Sandbox } from '../sandbox/types.js';
import { runSetupCommands, type BotCommandOptions, type CommandResult } from './botCommands.js';
import { keyFileMatcher, type RestoreResult, type SetupSnapshotCache, type SnapshotScope } from './setupSnapshot.js';

/** A round's (or a verification side's) use of the set-up snapshot cache (src/leaf/setupSnapshot.ts). */
export interface SetupSnapshotUse {
  cache: SetupSnapshotCache;
  /** `<installation id>/<owner>/<repo>`: the cache's directory for this repository. */
  repository: string;
  /** setupSnapshotKey() of this round's base. */
  key: string;
  /** The key files' globs (DEFAULT_KEY_FILES and `setup.cacheKeyFiles`): a patch touching one cannot reuse it. */
  keyFiles: string[];
  /**
   * Whether this round's set-up may be stored (in `scope`): never from a verification side (it holds the patch). Any
   * round may restore the repository's snapshots.
   */
  mayStore: boolean;
  /**
   * A follow-up round's pull request (`pull-<n>`): the round sets up a commit the model wrote, and the key covers the
   * key files, not every file a set-up may read, so what it stores goes to that pull request's own scope, which only
   * its later rounds restore (after the repository's own snapshot of the key, when there is one). Undefined: the
   * repository's scope (a first attempt on the base branch, and every verification side).
   */
  scope?: SnapshotScope;
  /** Where the cache's decisions go (the runner's log); never the issue. */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export interface SetUpOutcome {
  /** The set-up commands' results; empty when the snapshot was restored instead. */
  results: CommandResult[];
  /** What the model is told about failed set-up commands. */
  notes: string[];
  /** The snapshot key when the set-up was restored from it. */
  reusedKey?: string;
  durationMs: number;
}

export interface SetUpOptions extends BotCommandOptions {
  snapshot?: SetupSnapshotUse;
  /**
   * Store a snapshot after a successful set-up. Only for a workspace nobody but the set-up wrote to (the model's
   * round, before the model): never a verification side, which holds the model's patch.
   */
  capture: boolean;
}

/**
 * The set-up phase: restore the snapshot of this key when there is one, else run the set-up commands (also when the
 * restore failed: logged), then store a snapshot when every command exited 0 and `capture` allows it.
 */
export async function setUpSandbox(sandbox: Sandbox, commands: string[], o: SetUpOptions): Promise<SetUpOutcome> {
  const started = Date.now();
  const snap = o.snapshot;
  const log = snap?.log ?? (() => undefined);
  const step = { timeoutMs: o.timeoutMs, signal: o.signal };
  // The repository's snapshot first, then (a follow-up round) its pull request's own.
  const scopes: SnapshotScope[] = snap?.scope ? [undefined, snap.scope] : [undefined];
  for (const scope of snap && commands.length > 0 ? scopes : []) {
    const r: RestoreResult = await snap!.cache
      .restore(sandbox, snap!.repository, snap!.key, { ...step, scope })
      .catch((e: Error) => ({ restored: false as const, reason: e.message }));
    const where = { key: snap!.key, scope: scope ?? 'repository' };
    if (r.restored) {
      const durationMs = Date.now() - started;
      log('set-up restored from a snapshot', { ...where, bytes: r.bytes, durationMs });
      o.emit?.({ type: 'setup_end', reusedKey: snap!.key, durationMs });
      return { results: [], notes: [], reusedKey: snap!.key, durationMs };
    }
    // A failed extraction may have left part of the archive: the set-up then runs over it (it must be rerunnable).
    if (r.reason !== 'no snapshot') log('set-up snapshot not restored; running the set-up', { ...where, ...r });
    if (r.reason.startsWith('extracting failed')) break;
  }
  const { results, notes } = await runSetupCommands(sandbox, commands, o);
  const ranMs = Date.now() - started;
  const ok = results.length === commands.length && results.every((r) => r.exitCode === 0);
  if (snap?.mayStore && o.capture && ok && commands.length > 0 && !o.signal?.aborted) {
    const scope = snap.scope;
    const c = await snap.cache
      .capture(sandbox, snap.repository, snap.key, { ...step, scope })
      .catch((e: Error) => ({ stored: false as const, reason: e.message }));
    const where = { key: snap.key, scope: scope ?? 'repository' };
    if (c.stored) log('set-up snapshot stored', { ...where, bytes: c.bytes, durationMs: Date.now() - started - ranMs });
    else log('no set-up snapshot stored', { ...where, reason: c.reason });
  }
  if (commands.length > 0) o.emit?.({ type: 'setup_end', durationMs: ranMs });
  return { results, notes, durationMs: ranMs };
}

/** Whether one of `paths` is a key file: then that workspace runs the set-up instead of restoring the base's. */
export function touchesKeyFile(paths: string[], keyFiles: string[]): boolean {
  const isKey = keyFileMatcher(keyFiles);
  return paths.some((p) => isKey(p));
}
