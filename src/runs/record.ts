import { z } from 'zod';
import { TrajectoryFileSchema, trajectoryFromFile, type Trajectory } from '../leaf/trajectory.js';
import { VerificationOutcomeSchema, type VerificationOutcome } from '../verify/outcome.js';

/**
 * One round of a run as the trajectory store keeps it: the Leaf trajectory (upstream's format) plus what the page
 * shows around it (trigger, result, tests, final patch). Every round of one issue's run, the first draft, follow-ups
 * and CI fixes, is filed under the issue's number, so one page shows them all.
 */
export type RoundKind = 'draft' | 'follow-up' | 'ci-fix';

export interface RunRef {
  owner: string;
  repo: string;
  /** The issue the run started from; follow-up and CI rounds on its pull request are filed here too. */
  issueNumber: number;
}

export interface RoundRef extends RunRef {
  /** 0 for the first draft, then 1, 2, ... as the runner numbers follow-up and CI-fix rounds. */
  round: number;
}

export interface RoundTest {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  outputTail: string;
}

/** What the round header and the round selector show; stored apart so listing rounds reads no trajectory. */
export interface RoundSummary {
  round: number;
  kind: RoundKind;
  /** Who or what started it, in words (`label by @maint`, `review by @maint`, `CI: build failed`). */
  trigger: string;
  /** How it ended, in words (`draft pull request opened`, `no change`, `failed: ...`). */
  result: string;
  issueTitle: string;
  pullNumber?: number;
  startedAt: string;
  durationSec: number;
  steps: number;
  promptTokens: number;
  completionTokens: number;
  exitReason: string;
}

export interface StoredRound {
  version: 1;
  ref: RoundRef;
  summary: RoundSummary;
  tests: RoundTest[];
  /** The round's final patch (git diff). */
  patch: string;
  trajectory: Trajectory;
  /** The verify step's outcome (src/runner/verifyStep.ts); absent for rounds stored before it, or that did not verify. */
  verification?: VerificationOutcome;
}

const refSchema = z.object({
  owner: z.string(),
  repo: z.string(),
  issueNumber: z.number().int().positive(),
  round: z.number().int().nonnegative(),
});

export const RoundSummarySchema = z.object({
  round: z.number().int().nonnegative(),
  kind: z.enum(['draft', 'follow-up', 'ci-fix']),
  trigger: z.string(),
  result: z.string(),
  issueTitle: z.string(),
  pullNumber: z.number().int().positive().optional(),
  startedAt: z.string(),
  durationSec: z.number().nonnegative(),
  steps: z.number().int().nonnegative(),
  promptTokens: z.number().nonnegative(),
  completionTokens: z.number().nonnegative(),
  exitReason: z.string(),
});

const storedRoundSchema = z.object({
  version: z.literal(1),
  ref: refSchema,
  summary: RoundSummarySchema,
  tests: z.array(
    z.object({
      command: z.string(),
      exitCode: z.number().int().nullable(),
      timedOut: z.boolean(),
      outputTail: z.string(),
    }),
  ),
  patch: z.string(),
  trajectory: TrajectoryFileSchema,
  // A verdict another version wrote that does not parse costs the page its Verification section, never the round.
  verification: VerificationOutcomeSchema.optional().catch(undefined),
});

/** A stored round read back; null when the bytes are not one (a damaged or foreign object). */
export function parseStoredRound(text: string): StoredRound | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = storedRoundSchema.safeParse(raw);
  if (!parsed.success) return null;
  const { verification, ...rest } = parsed.data;
  return {
    ...rest,
    trajectory: trajectoryFromFile(parsed.data.trajectory),
    ...(verification ? { verification } : {}),
  };
}

/** Tokens over a trajectory's steps (the `frognano` facts; zero for upstream's own files). */
export function trajectoryTokens(t: Trajectory): { promptTokens: number; completionTokens: number } {
  let promptTokens = 0;
  let completionTokens = 0;
  for (const s of t.frognano.steps) {
    promptTokens += s.prompt_tokens;
    completionTokens += s.completion_tokens;
  }
  return { promptTokens, completionTokens };
}

/** The summary of a round the runner just finished: the numbers come from the trajectory itself. */
export function summarizeRound(
  t: Trajectory,
  o: { round: number; kind: RoundKind; trigger: string; result: string; pullNumber?: number; issueTitle?: string },
): RoundSummary {
  return {
    round: o.round,
    kind: o.kind,
    trigger: o.trigger,
    result: o.result,
    issueTitle: o.issueTitle ?? t.frognano.task.title,
    ...(o.pullNumber ? { pullNumber: o.pullNumber } : {}),
    startedAt: t.frognano.started_at,
    durationSec: t.elapsed_sec,
    steps: t.steps.length,
    ...trajectoryTokens(t),
    exitReason: t.exit_reason,
  };
}

/** Everything the runner knows when a round ends, as the store keeps it (the one call it makes after the solve). */
export function storedRound(
  t: Trajectory,
  o: RoundRef & {
    kind: RoundKind;
    trigger: string;
    result: string;
    pullNumber?: number;
    issueTitle?: string;
    tests?: RoundTest[];
    patch?: string;
    verification?: VerificationOutcome;
  },
): StoredRound {
  return {
    version: 1,
    ref: { owner: o.owner, repo: o.repo, issueNumber: o.issueNumber, round: o.round },
    summary: summarizeRound(t, o),
    tests: (o.tests ?? []).map((x) => ({
      command: x.command,
      exitCode: x.exitCode,
      timedOut: x.timedOut,
      outputTail: x.outputTail,
    })),
    patch: o.patch ?? t.output_patch,
    trajectory: t,
    ...(o.verification ? { verification: o.verification } : {}),
  };
}
