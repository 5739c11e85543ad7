import { z } from 'zod';

/**
 * What a verification-repair round carries (issue #26 item 7): a round the runner queues itself when the verdict on
 * the change it just published failed and the repository asks for repairs (`verify.onFailure: repair`). The report
 * is built by the bot from the verdict it measured (regressions, failing commands' output tails, findings), so the
 * next runner needs nothing else to tell the model what to fix.
 */
export const MAX_REPAIR_REPORT_CHARS = 16_000;

export const VerifyRepairSchema = z.object({
  /** The head whose verdict failed: a round that finds the branch moved builds on the new head, as follow-ups do. */
  headSha: z.string().regex(/^[0-9a-f]{40}$/, 'not a commit sha'),
  /** 1 for the first repair round in a row on this pull request. */
  streak: z.number().int().min(1).max(100),
  report: z.string().max(MAX_REPAIR_REPORT_CHARS + 200),
});
export type VerifyRepair = z.infer<typeof VerifyRepairSchema>;

/** What a round that published a failing verdict hands to its runner for the repair round (JobResult.repair). */
export const RepairRequestSchema = VerifyRepairSchema.extend({
  pullNumber: z.number().int().positive(),
  headBranch: z.string().min(1).max(255),
  baseBranch: z.string().min(1).max(255),
});
export type RepairRequest = z.infer<typeof RepairRequestSchema>;

/** Rounds no person asked for: a CI fix, a verification repair. */
export function automaticSource(source: string): boolean {
  return source === 'ci' || source === 'verify';
}
