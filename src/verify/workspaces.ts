import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CommandResult } from '../leaf/botCommands.js';
import { setUpSandbox, type SetupSnapshotUse } from '../leaf/setUp.js';
import { hostGit, sanitizeGitDir, WorkspaceError } from '../leaf/workspace.js';
import type { Sandbox } from '../sandbox/types.js';
import type { VerifyCommandRun } from './types.js';

/**
 * Fresh workspaces for the verification sides. Each side is built from the base COMMIT of the runner's pristine
 * clone (never from its working tree, which may hold the staged patch, and never from the model's workspace); the
 * patch, which the model wrote, is applied INSIDE the side's sandbox by the clean shell, so the host never writes a
 * path the patch names.
 */
export interface SideWorkspace {
  root: string;
  repoDir: string;
  cleanup(): Promise<void>;
}

function assertSha(sha: string): void {
  if (!/^[0-9a-f]{40,64}$/.test(sha)) throw new WorkspaceError(`invalid base commit ${JSON.stringify(sha)}`);
}

async function git(args: string[], cwd: string, home: string, what: string): Promise<void> {
  const r = await hostGit(args, cwd, home);
  if (r.code !== 0) throw new WorkspaceError(`${what}: ${r.stderr.trim().slice(0, 500) || 'timed out'}`);
}

/** A new clone of `commit` from `sourceRepo` (objects copied, no remote, no hooks), checked out detached. */
export async function createSideWorkspace(sourceRepo: string, commit: string, tmpDir?: string): Promise<SideWorkspace> {
  assertSha(commit);
  const root = await fs.mkdtemp(path.join(tmpDir ?? os.tmpdir(), 'frognano-verify-'));
  // Traverse only, as in prepareWorkspace: a sandbox in a user namespace must reach root/repo.
  await fs.chmod(root, 0o711);
  const cleanup = () => fs.rm(root, { recursive: true, force: true });
  try {
    const home = path.join(root, 'home');
    const repoDir = path.join(root, 'repo');
    await fs.mkdir(home);
    await git(
      ['clone', '-q', '--no-checkout', '--no-hardlinks', path.resolve(sourceRepo), repoDir],
      root,
      home,
      'cannot clone the base',
    );
    const gitDir = path.join(repoDir, '.git');
    const alternates = path.join(gitDir, 'objects', 'info', 'alternates');
    if (await fs.stat(alternates).catch(() => null)) {
      await git(['repack', '-a', '-d', '-q'], repoDir, home, 'cannot make the side self-contained');
      await fs.rm(alternates, { force: true });
    }
    await git(['checkout', '-q', '--detach', commit], repoDir, home, `cannot check out ${commit.slice(0, 12)}`);
    await sanitizeGitDir(gitDir, home);
    return { root, repoDir, cleanup };
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
}

/** git in the sandbox by its absolute path, with only the workspace's own config (as src/leaf/patch.ts). */
const SANDBOX_GIT = "/usr/bin/git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c 'safe.directory=*'";
const SANDBOX_GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_ATTR_NOSYSTEM: '1' };

/** Applies the patch inside the sandbox (stdin, clean shell). Returns why it did not apply, or undefined. */
export async function applyPatchInSandbox(
  sandbox: Sandbox,
  patch: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (!patch.trim()) return undefined;
  const r = await sandbox.exec(`${SANDBOX_GIT} apply --whitespace=nowarn -`, {
    stdin: patch,
    clean: true,
    env: SANDBOX_GIT_ENV,
    timeoutMs: 120_000,
    signal,
    maxOutputBytes: 64 * 1024,
  });
  if (r.exitCode === 0) return undefined;
  if (r.timedOut || r.cancelled) return 'applying the patch timed out or was cancelled';
  return `the patch does not apply to the base commit: ${r.stderr.trim().split('\n')[0]?.slice(0, 300) ?? ''}`;
}

export function toCommandRun(r: CommandResult): VerifyCommandRun {
  return {
    command: r.command,
    exitCode: r.exitCode,
    timedOut: r.timedOut,
    durationMs: r.durationMs,
    outputTail: r.outputTail,
    tests: [],
    source: 'exit_code',
    ...(r.timedOut ? { notRun: `timed out` } : {}),
  };
}

export interface PrepareSideOptions {
  sourceRepo: string;
  commit: string;
  /** Applied inside the sandbox after the checkout (the patched side); none for the base. */
  patch?: string;
  /** Runs in the sandbox after the patch and before the set-up; returns why the side cannot go on, or undefined. */
  afterPatch?: (sandbox: Sandbox, signal: AbortSignal) => Promise<string | undefined>;
  sandboxFactory: (workspaceDir: string) => Promise<Sandbox>;
  setupCommands: string[];
  setupNetwork: boolean | import('../sandbox/egress/index.js').EgressGrant;
  setupTimeoutMs: number;
  /** Restored instead of running the set-up (never stored from a side: a side holds the model's patch). */
  setupSnapshot?: SetupSnapshotUse;
  signal?: AbortSignal;
  tmpDir?: string;
}

export interface PreparedSide {
  sandbox: Sandbox;
  setup: VerifyCommandRun[];
  /** The set-up was restored from the snapshot instead of run (`setup` is then empty). */
  setupReused: boolean;
  /** Closes the sandbox and removes the workspace. Safe to call twice. */
  close(): Promise<void>;
}

export class SideNotRun extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SideNotRun';
  }
}

/**
 * A fresh sandbox on `commit` (+ patch) with the set-up done: the one place a verification side (and a scan) gets
 * its sandbox; a set-up snapshot (docs/warm-starts.md) replaces the set-up here when one is given. Throws SideNotRun with a reason a
 * maintainer can act on when the side cannot start.
 */
export async function prepareSide(o: PrepareSideOptions): Promise<PreparedSide> {
  let ws: SideWorkspace;
  try {
    ws = await createSideWorkspace(o.sourceRepo, o.commit, o.tmpDir);
  } catch (err) {
    throw new SideNotRun(err instanceof WorkspaceError ? err.message : 'the side workspace could not be made');
  }
  let sandbox: Sandbox | undefined;
  const close = async () => {
    await sandbox?.close().catch(() => undefined);
    await ws.cleanup().catch(() => undefined);
  };
  try {
    sandbox = await o.sandboxFactory(ws.repoDir).catch((err: Error) => {
      // The error text may carry host paths or engine details: the verdict (public) gets its kind only.
      throw new SideNotRun(`the sandbox did not start (${err.name})`);
    });
    const bad = o.patch ? await applyPatchInSandbox(sandbox, o.patch, o.signal) : undefined;
    if (bad) throw new SideNotRun(bad);
    const after = o.afterPatch ? await o.afterPatch(sandbox, o.signal ?? new AbortController().signal) : undefined;
    if (after) throw new SideNotRun(after);
    const { results, reusedKey } = await setUpSandbox(sandbox, o.setupCommands, {
      timeoutMs: o.setupTimeoutMs,
      signal: o.signal,
      network: o.setupNetwork,
      snapshot: o.setupSnapshot,
      capture: false,
    });
    return { sandbox, setup: results.map(toCommandRun), setupReused: reusedKey !== undefined, close };
  } catch (err) {
    await close();
    throw err;
  }
}
