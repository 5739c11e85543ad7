import { SandboxLimitError } from './types.js';

/** What one measurement of the workspace found (sizes in KiB as the file system allocates them). */
export interface WorkspaceUsage {
  kib: number;
  files: number;
}

/**
 * Prints "<KiB> <entries>" for the workspace ($1), walking it without following links or leaving its file system.
 * Run inside the sandbox boundary (never on the host: the tree is the model's). Hard links count once per name,
 * which over-counts, the safe side. A directory the walk cannot enter (the sandbox user may chmod its own files)
 * is made enterable again and the walk repeated; when it still fails, the measurement fails and so does the budget.
 */
export const MEASURE_SCRIPT =
  'set -o pipefail; m() { find "$1" -xdev -printf "%k\\n" 2>/dev/null | awk \'{s+=$1; n++} END {printf "%d %d\\n", s, n}\'; }; ' +
  'out=$(m "$1") || { chmod -R u+rwX "$1" 2>/dev/null; out=$(m "$1"); } || exit 1; echo "$out"';

/**
 * The workspace disk budget, enforced by measuring. Why measuring: a sized file system (loop device, quota)
 * needs root on the host for every job, which the runner should not have; the docker sandbox's bind mount and
 * bwrap's bind both write to whatever file system the runner's work directory is on. So the workspace is measured
 * from inside the sandbox boundary every `intervalMs` while a command runs, and after a command when the last
 * measurement is older than that. Past the budget the running command is killed and the sandbox refuses further
 * use with a SandboxLimitError the runner reports. The overshoot is bounded by what a command can write in one
 * interval (and each file by fileSizeMb).
 */
export class WorkspaceBudget {
  /** Set once the budget was exceeded (or the workspace could not be measured): every later use throws it. */
  exceeded: SandboxLimitError | undefined;
  private lastMeasured = 0;
  private measuring: Promise<void> | undefined;

  constructor(
    private readonly measure: () => Promise<WorkspaceUsage>,
    readonly limits: { mb: number; files: number },
    private readonly intervalMs = 2000,
  ) {}

  /**
   * Measures now (one at a time) and records an excess. A failed measurement counts only when `final` (after a
   * command, when nothing of it runs any more); while it runs, a fork bomb holding every pid may well make one fail.
   */
  check(final = false): Promise<void> {
    this.measuring ??= (async () => {
      try {
        const u = await this.measure();
        this.lastMeasured = Date.now();
        if (u.kib > this.limits.mb * 1024) {
          this.exceeded ??= new SandboxLimitError(
            'workspace_disk',
            `the job's files grew past the workspace budget of ${this.limits.mb} MiB (${Math.round(u.kib / 1024)} MiB measured)`,
          );
        } else if (u.files > this.limits.files) {
          this.exceeded ??= new SandboxLimitError(
            'workspace_files',
            `the job created more than the workspace budget of ${this.limits.files} files and directories (${u.files} counted)`,
          );
        }
      } catch (err) {
        if (final) this.exceeded ??= new SandboxLimitError('workspace_disk', `the workspace could not be measured: ${(err as Error).message}`);
      } finally {
        this.measuring = undefined;
      }
    })();
    return this.measuring;
  }

  /**
   * Watches the workspace while one command runs: `kill` is called when the budget is exceeded. The returned stop()
   * ends the watch and measures once more when the last measurement is older than the interval.
   */
  watch(kill: () => void): () => Promise<void> {
    let stopped = false;
    const timer = setInterval(() => {
      void this.check().then(() => {
        if (this.exceeded && !stopped) kill();
      });
    }, this.intervalMs);
    timer.unref();
    let final: Promise<void> | undefined;
    return () =>
      (final ??= (async () => {
        stopped = true;
        clearInterval(timer);
        if (this.measuring) await this.measuring;
        if (!this.exceeded && Date.now() - this.lastMeasured >= this.intervalMs) await this.check(true);
      })());
  }
}

/** Parses MEASURE_SCRIPT's output. */
export function parseUsage(stdout: string): WorkspaceUsage {
  const m = /^(\d+) (\d+)\n?$/.exec(stdout);
  if (!m) throw new Error(`unexpected measurement ${JSON.stringify(stdout.slice(0, 100))}`);
  return { kib: Number(m[1]), files: Number(m[2]) };
}
