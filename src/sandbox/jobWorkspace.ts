import { promises as fs } from 'node:fs';
import { WorkspaceBudget, type WorkspaceUsage } from './budget.js';
import { jobTimeLimitError, parseUser } from './config.js';
import { claimWorkspace, type WorkspaceOwner } from './ownership.js';
import type { SandboxLimitError } from './types.js';

/** What of a sandbox's configuration the job workspace uses (docker and bwrap have all of it). */
export interface JobWorkspaceLimits {
  user: string;
  jobTimeoutMs: number;
  workspaceMb: number;
  workspaceFiles: number;
  workspaceCheckMs: number;
}

/** The workspace's real path on the host; throws when it is not a directory. */
export async function resolveWorkspaceDir(workspaceDir: string): Promise<string> {
  const st = await fs.stat(workspaceDir).catch(() => null);
  if (!st?.isDirectory()) throw new Error(`workspace ${workspaceDir} is not a directory`);
  return fs.realpath(workspaceDir);
}

/**
 * One job's workspace, as the isolating sandboxes (docker, bwrap) share it: the directory claimed for the sandbox
 * user (ownership.ts), the disk budget measured inside the sandbox (budget.ts), the job deadline, and the one
 * "may this sandbox still be used" check every command and close go through. A sandbox stops being usable when it
 * is closed, past its deadline, broken (its own reason) or over its budget; the error says which.
 */
export class JobWorkspace {
  /** When the job time limit is reached (ms since the epoch). */
  readonly deadline: number;
  private expiredFlag = false;
  private readonly timer: NodeJS.Timeout;
  private broken: string | undefined;
  private budget: WorkspaceBudget | undefined;
  private closing: Promise<void> | undefined;
  private readonly onExpire: Array<() => void> = [];

  private constructor(
    /** Workspace directory on the host (real path). */
    readonly hostDir: string,
    readonly owner: WorkspaceOwner,
    private readonly limits: JobWorkspaceLimits,
  ) {
    this.deadline = Date.now() + limits.jobTimeoutMs;
    this.timer = setTimeout(() => this.expire(), limits.jobTimeoutMs);
    this.timer.unref();
  }

  /**
   * Claims `hostDir` (a resolveWorkspaceDir() result) for the sandbox user and starts the job clock. The sandbox
   * gives it back with close(), or with release() when the sandbox could not be started.
   */
  static async claim(hostDir: string, limits: JobWorkspaceLimits): Promise<JobWorkspace> {
    const owner = await claimWorkspace(hostDir, parseUser(limits.user));
    return new JobWorkspace(hostDir, owner, limits);
  }

  /** Calls `fn` once when the job time limit is reached (docker kills its container then). */
  whenExpired(fn: () => void): void {
    this.onExpire.push(fn);
  }

  private expire(): void {
    this.expiredFlag = true;
    for (const fn of this.onExpire) fn();
  }

  /** Whether the job time limit has been reached. */
  get expired(): boolean {
    return this.expiredFlag || Date.now() >= this.deadline;
  }

  /** How long the job may still run (at least 1 ms, so it can be used as a timeout). */
  remainingMs(): number {
    return Math.max(1, this.deadline - Date.now());
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  /** Starts the disk budget; `measure` must run inside the sandbox boundary (never on the host). */
  measureWith(measure: () => Promise<WorkspaceUsage>): void {
    const { workspaceMb, workspaceFiles, workspaceCheckMs } = this.limits;
    this.budget = new WorkspaceBudget(measure, { mb: workspaceMb, files: workspaceFiles }, workspaceCheckMs);
  }

  /** Watches the budget while one command runs (WorkspaceBudget.watch); `kill` stops the command. */
  watch(kill: () => void): () => Promise<void> {
    return this.budget ? this.budget.watch(kill) : async () => {};
  }

  /** The limit the job went past, once it did. */
  get overBudget(): SandboxLimitError | undefined {
    return this.budget?.exceeded;
  }

  /** Something is wrong that later commands must not run into: every later use fails with `reason`. */
  markBroken(reason: string): void {
    this.broken ??= reason;
  }

  /** The error a command fails with when the job reached its time limit. */
  timeLimitError(): Error {
    return jobTimeLimitError(this.limits.jobTimeoutMs);
  }

  /** Throws when the sandbox may no longer be used: closed, past the job time limit, broken, or over budget. */
  assertUsable(): void {
    if (this.closing) throw new Error('sandbox is closed');
    if (this.expired) throw this.timeLimitError();
    if (this.broken) throw new Error(`sandbox stopped: ${this.broken}`);
    if (this.budget?.exceeded) throw this.budget.exceeded;
  }

  /** Gives the workspace back to its owner and stops the job clock (for a sandbox that could not start). */
  async release(): Promise<void> {
    clearTimeout(this.timer);
    await this.owner.restore();
  }

  /**
   * Closes the job once: `stop` ends what the sandbox holds (container, processes, state files), then the workspace
   * goes back to its owner even when `stop` failed. Later calls return the first one's promise.
   */
  close(stop: () => Promise<void>): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.timer);
      try {
        await stop();
      } finally {
        await this.owner.restore();
      }
    })();
    return this.closing;
  }
}
