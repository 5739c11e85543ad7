import type { Logger } from 'pino';
import type { InstallationAccess } from '../github/client.js';
import type { NumstatEntry } from '../github/git.js';
import type { RepoConfig } from '../github/repoConfig.js';
import type { IssueRef, StatusMeta, StatusState } from '../github/statusComment.js';
import type { SolveResult } from '../leaf/solve.js';
import type { TaskSection } from '../leaf/trajectory.js';
import type { JobData } from '../queue/schema.js';
import type { RoundKind } from '../runs/record.js';
import type { ProgressReporter } from './progress.js';
import type { RunnerContext } from './types.js';
import type { VerificationOutcome } from '../verify/outcome.js';
import type { RepairRequest } from '../queue/verifyRepair.js';

/** One round of a job as it runs (src/runner/round.ts owns its lifecycle). */
export interface JobRun<D extends JobData = JobData> {
  readonly jobId: string;
  readonly data: D;
  readonly ctx: RunnerContext;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Scratch space for this round's clones; removed when it ends. */
  readonly jobDir: string;
  readonly started: number;
  /** Where the status comment lives (the issue, or the pull request of a follow-up). */
  readonly status: { ref: IssueRef; meta: Omit<StatusMeta, 'updatedAt'> };
  access?: InstallationAccess;
  reporter?: ProgressReporter;
  /** What the status comment says when the round ends. */
  final?: StatusState;
  /** What the model did, once it has run (stored for the run page when the round ends). */
  solved?: SolveResult;
  /**
   * The round's run page, once drawn (src/runner/runPage.ts); `url` only when the app's public URL is known,
   * `verification` once the verify step has an outcome (the page shows it).
   */
  page?: { round: number; kind: RoundKind; url?: string; verification?: VerificationOutcome };
}

/**
 * A run once it has its token and its progress reporter. A variant with `github: false` (an eval instance) gets no
 * token: its hooks never read `access`.
 */
export type LiveRun<D extends JobData = JobData> = JobRun<D> & {
  access: InstallationAccess;
  reporter: ProgressReporter;
};

/** What a variant checked out: the model works on `workDir`; instructions are read from `instructionsDir`. */
export interface Checkout {
  config: RepoConfig;
  workDir: string;
  instructionsDir: string;
}

/** A round a variant stops before the model runs (a pull request closed meanwhile, a round cap). */
export interface Stopped {
  stop: 'no_patch' | 'refused';
  reason: string;
}

export interface RunFacts {
  exitReason: string;
  turns: number;
  elapsedSeconds: number;
  trajectoryPath?: string;
}

/** How a round ended without throwing; statusFor and resultFor (round.ts) derive the comment and the job result. */
export type RoundEnd =
  | {
      outcome: 'pull_request';
      url: string;
      number: number;
      branch: string;
      summary: string;
      facts: RunFacts;
      /** The status comment's verification line (src/github/verification.ts verificationStatusLine). */
      verification?: string;
      /** The repair round this round asks for (its verdict failed; src/runner/verifyRepair.ts). */
      repair?: RepairRequest;
    }
  | { outcome: 'no_patch' | 'refused'; reason: string; facts: RunFacts }
  | { outcome: 'cancelled'; by?: string; facts: RunFacts }
  /** An eval instance's end: its prediction (finished) or why it could not run (error), stored for the CLI. */
  | { outcome: 'prediction'; status: 'finished' | 'error'; reason?: string; facts: RunFacts };

/** A change that applied on the host clone and passed the guardrails. */
export interface CheckedChange {
  solved: SolveResult;
  files: NumstatEntry[];
  facts: RunFacts;
  /** The verify step's outcome (src/runner/verifyStep.ts); absent for a variant that does not verify. */
  verification?: VerificationOutcome;
}

/** Where a round published: the pull request and its branch. */
export interface Published {
  url: string;
  number: number;
  branch: string;
  /** The commit pushed (the verification check run goes on it). */
  headSha?: string;
}

/** Texts a kind of round shows when it ends without publishing, or cannot publish. */
export interface RoundTexts {
  /** Progress detail while checking out. */
  cloning: string;
  /** Progress detail while checking and publishing. */
  publishing: string;
  /** Starts the sentence for a run that stopped before the model was done ("No pull request"). */
  unfinished: string;
  noFileChanged: string;
  emptyDiff: string;
  /** After "Refused by a guardrail: <why>.". */
  refusedTail: string;
  patchFailed(jobId: string): string;
}

/**
 * What differs between kinds of round (a first attempt, src/runner/firstAttempt.ts; a follow-up,
 * src/runner/followUp.ts). Everything else is the one pipeline in src/runner/round.ts.
 */
export interface RoundVariant<D extends JobData = JobData, C extends Checkout = Checkout> {
  /** How the runner's log names a round of this kind ("job", "follow-up"). */
  noun: string;
  /** What the run page calls a round of this kind. */
  pageKind: RoundKind;
  logFields(data: D): Record<string, unknown>;
  statusTarget(data: D): { ref: IssueRef; meta: Omit<StatusMeta, 'updatedAt' | 'jobId' | 'triggeredBy'> };
  texts(data: D): RoundTexts;
  /** Clones what the model works on and reads the repository's config. */
  prepare(run: LiveRun<D>): Promise<C | Stopped>;
  /** Sections the task gets after the shared ones (a writer's feedback, failing checks read while preparing). */
  taskAdditions(data: D, checkout: C): TaskSection[];
  trajectoryDir(ctx: RunnerContext, data: D): string;
  /** A run that stopped before the model was done: keep its work somewhere; a sentence saying where, or null. */
  keepUnfinished?(run: LiveRun<D>, checkout: C, solved: SolveResult): Promise<string | null>;
  /** Called when nothing is published: `note` says why ("nothing pushed", "refused by a guardrail"). */
  nothingPublished?(run: LiveRun<D>, note: string): Promise<void>;
  /** Publishes the checked change on `checkout`; says where. */
  publish(run: LiveRun<D>, checkout: C, change: CheckedChange): Promise<Published>;
  /** `false`: the change is published without the verify step (an eval round grades on its own). Default: verify. */
  verifies?: false;
  /**
   * `false`: the round never touches GitHub (an eval instance): no installation token, no status comment, no run
   * page; progress goes to the job only.
   */
  github?: false;
  /** The model's run, when the variant runs it otherwise than in the repository's sandbox (an instance's image). */
  solve?(run: LiveRun<D>, checkout: C): Promise<SolveResult>;
  /**
   * Ends the round right after the model's run, when the variant publishes no change on the host clone (an eval
   * instance stores its prediction): judging, applying, verifying and publishing are its own.
   */
  conclude?(run: LiveRun<D>, checkout: C, solved: SolveResult, facts: RunFacts): Promise<RoundEnd>;
}
