import { UnrecoverableError } from 'bullmq';
import type { TrajectoryStore } from '../runs/trajectoryStore.js';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AppCredentials, InstallationAccess } from '../github/client.js';
import type { Identity } from '../github/git.js';
import type { GitMirrorCache } from '../github/gitMirror.js';
import type { ModelBackend } from '../inference/types.js';
import type { Sampling } from '../leaf/sampling.js';
import type { SetupSnapshotCache } from '../leaf/setupSnapshot.js';
import type { FrognanoMetrics } from '../ops/metrics.js';
import type { SandboxConfig } from '../sandbox/config.js';
import type { Sandbox } from '../sandbox/types.js';
import type { BaseResultCache, Verdict, VerifyOptions } from '../verify/types.js';

/** What every job flow of the runner shares: its context, the job it is handed, how it fails or stops. */

/** Why a job's AbortSignal fired: a maintainer's `/frognano cancel`, or the runner shutting down. */
export type AbortCause = { kind: 'cancel'; by?: string } | { kind: 'shutdown' };

/** Thrown when the runner shuts down mid-job: the worker hands the job back to the queue. */
export class HandBackError extends Error {
  constructor() {
    super('the runner is shutting down; the job goes back to the queue');
    this.name = 'HandBackError';
  }
}

/** Everything one runner process shares across jobs. */
export interface RunnerContext {
  redis: Redis;
  app: AppCredentials;
  /** Base URL of git remotes (`https://github.com`; `file:///...` in tests). */
  gitBaseUrl: string;
  backend: ModelBackend;
  sandbox: SandboxConfig;
  /** Per-job scratch space (clones); each job gets its own directory, removed afterwards. */
  workDir: string;
  /** Full trajectories are kept here: `<dir>/<owner>/<repo>/issue-<n>-attempt-<k>/` (each kind of round names its own). */
  trajectoryDir: string;
  identity?: Identity;
  /** `describeRunner()` line shown in the status comment and the pull request: the public name, not the hostname. */
  runnerDescription: string;
  logger: Logger;
  /** Runner-wide cap on turns: a repository may lower it, never raise it. */
  maxTurns?: number;
  /** Runner-wide cap on the agent's wall time. */
  wallTimeMs?: number;
  /** Overrides of upstream Leaf's eval sampling (FROGNANO_TEMPERATURE ...; src/leaf/sampling.ts). */
  sampling?: Partial<Sampling>;
  gitTimeoutMs?: number;
  /** Bare mirrors per installation and repository: every round's clone goes through it (none: straight clones). */
  gitCache?: GitMirrorCache;
  /** Set-up snapshots per installation and repository (docs/warm-starts.md); none: every round runs its set-up. */
  setupCache?: SetupSnapshotCache;
  /** Tests shorten these. */
  progressIntervals?: { jobEveryMs?: number; commentEveryMs?: number };
  /** Swappable for tests that exercise the real thing through a different door (never a fake GitHub). */
  createAccess?: (installationId: number, repo: string) => Promise<InstallationAccess>;
  createSandbox?: (cfg: SandboxConfig, workspaceDir: string) => Promise<Sandbox>;
  metrics?: FrognanoMetrics;
  /** Every round's trajectory for the run pages (src/runs); none: no pages. */
  trajectoryStore?: TrajectoryStore;
  /** The app's public base URL (FROGNANO_PUBLIC_URL): the run pages are linked only when it is set. */
  publicUrl?: string;
  /** FROGNANO_VERIFY=off: this runner publishes changes without verifying them (and the pull request says so). */
  verifyOff?: boolean;
  /**
   * The verifier (src/verify/index.ts verifyChange), for runner/service.ts to pass. Absent: no verify step (the
   * description keeps its Tests section, as before).
   */
  verifyChange?: (options: VerifyOptions) => Promise<Verdict>;
  /** Where base results are kept between rounds (Redis). */
  verifyCache?: BaseResultCache;
  /**
   * FROGNANO_EVAL_PULL_IMAGES=on: an eval instance whose image is not on this runner is pulled (its registry must be
   * reachable). Off (the default): refused, with a per-instance error the CLI records.
   */
  evalPullImages?: boolean;
}

/** The part of a BullMQ job processJob uses (so the CLI or a test can drive it too). */
export interface JobHandle {
  id?: string;
  data: unknown;
  updateProgress(p: object): Promise<unknown>;
}

export type FailureCategory = 'token' | 'clone' | 'config' | 'model' | 'sandbox' | 'publish' | 'unexpected';

/**
 * A failure whose reason is already phrased for the issue (src/runner/publicFailure.ts: no runner internals);
 * the error behind it goes to the runner's log. UnrecoverableError so BullMQ never retries it.
 */
export class JobFailure extends UnrecoverableError {
  constructor(
    readonly reason: string,
    /** Small fixed set, used as a metrics label (a free-text reason would explode the series count). */
    readonly category: FailureCategory,
    /** What actually went wrong, for the log only. */
    readonly underlying?: unknown,
  ) {
    super(reason);
    this.name = 'JobFailure';
  }
}
