import { z } from 'zod';
import { TestStatusSchema as status, VerifySideSchema as SideSchema } from './sideSchema.js';
import type { Verdict } from './types.js';

/**
 * What a round publishes about verification: the verdict, or why there is none. "Not run" (the verifier crashed,
 * timed out, or could not measure the patched side) is never a pass; "off" says who turned it off. The round
 * pipeline builds it (src/runner/verifyStep.ts); the check run, the pull request description, the status comment
 * and the run page render it.
 */
export type VerificationOutcome =
  | { state: 'verified'; verdict: Verdict }
  | { state: 'not_run'; reason: string; verdict?: Verdict }
  | { state: 'off'; reason: string };

/** The outcome of a verdict the verifier returned: without a measured patched side it is "not run". */
export function outcomeOfVerdict(verdict: Verdict): VerificationOutcome {
  if (verdict.patched.notRun) return { state: 'not_run', reason: verdict.patched.notRun, verdict };
  return { state: 'verified', verdict };
}

/** A failing verdict: the one a repair round answers (`verify.onFailure`). */
export function failingVerdict(o: VerificationOutcome | undefined): Verdict | undefined {
  return o?.state === 'verified' && o.verdict.conclusion === 'failure' ? o.verdict : undefined;
}

/** The one line a person reads first (status comment, run history), in plain text; test names are not escaped. */
export function verificationLine(o: VerificationOutcome): string {
  switch (o.state) {
    case 'off':
      return `⚪ not verified: ${o.reason}`;
    case 'not_run':
      return `⚠️ verification did not run: ${o.reason}`;
    case 'verified': {
      const icon = { success: '✅', failure: '❌', neutral: '⚪' }[o.verdict.conclusion];
      return `${icon} ${o.verdict.headline}`;
    }
  }
}

// ---- the stored form (the run page reads it back; what another version wrote may not parse) ----

const ChangeSchema = z.object({
  id: z.string(),
  command: z.string(),
  base: z.union([status, z.literal('absent')]).optional(),
  patched: z.union([status, z.literal('absent')]).optional(),
  baseTestsOnPatch: z.union([status, z.literal('absent')]).optional(),
  file: z.string().optional(),
  line: z.number().optional(),
  message: z.string().optional(),
});
const VerdictSchema = z.object({
  conclusion: z.enum(['success', 'failure', 'neutral']),
  headline: z.string(),
  base: SideSchema,
  patched: SideSchema,
  fixed: z.array(ChangeSchema),
  regressions: z.array(ChangeSchema),
  stillFailing: z.array(ChangeSchema),
  newTests: z.array(ChangeSchema),
  testFiles: z.array(
    z.object({
      file: z.string(),
      change: z.enum(['added', 'modified', 'deleted', 'unchanged']),
      removedTests: z.array(z.string()),
      newlySkipped: z.array(z.string()),
      changedTests: z.array(z.string()).default([]),
    }),
  ),
  baseTestsOnPatch: SideSchema.optional(),
  findings: z.array(
    z.object({
      kind: z.enum(['security', 'secret']),
      tool: z.string(),
      rule: z.string(),
      severity: z.enum(['low', 'medium', 'high']),
      file: z.string(),
      line: z.number(),
      message: z.string(),
    }),
  ),
  scans: z.array(
    z.object({
      tool: z.string(),
      ran: z.boolean(),
      reason: z.string().optional(),
      files: z.number().optional(),
    }),
  ),
  exitCodesOnly: z.boolean(),
  durationMs: z.number(),
});

export const VerificationOutcomeSchema: z.ZodType<VerificationOutcome> = z.union([
  z.object({ state: z.literal('verified'), verdict: VerdictSchema }),
  z.object({ state: z.literal('not_run'), reason: z.string(), verdict: VerdictSchema.optional() }),
  z.object({ state: z.literal('off'), reason: z.string() }),
]) as z.ZodType<VerificationOutcome>;
