import { z } from 'zod';
import type { Tenant } from '../fairShare/tenants.js';

/**
 * The operator's quotas file (FROGNANO_QUOTAS_FILE, YAML): limits for every installation and repository
 * (`defaults`), per installation by account login (with its fair-share `weight`), per repository by owner/name.
 * Unknown keys are errors: a misspelt limit must not silently mean "no limit".
 */
const count = z.number().int().nonnegative();

export const LimitsSchema = z.strictObject({
  runsPerHour: count.optional(),
  runnerSecondsPerDay: count.optional(),
  runnerSecondsPerMonth: count.optional(),
  /**
   * Runner-seconds a run holds against the day and month limits from when it is accepted until it ends (then the
   * time it really used counts): the runners' wall-time limit, or what a run of this tenant usually takes.
   */
  holdSecondsPerRun: z.number().int().positive().optional(),
});
export type Limits = z.infer<typeof LimitsSchema>;
export type QuotaName = 'runsPerHour' | 'runnerSecondsPerDay' | 'runnerSecondsPerMonth';

/** What a run holds when the quotas file names no `holdSecondsPerRun`: 30 minutes. */
export const DEFAULT_HOLD_SECONDS = 1800;

export const QUOTA_NAMES: readonly QuotaName[] = ['runnerSecondsPerDay', 'runnerSecondsPerMonth', 'runsPerHour'];

export const InstallationQuotaSchema = LimitsSchema.extend({
  /** Share of the model slots against other installations (default 1). */
  weight: z.number().int().min(1).max(1000).optional(),
});

const lowerKeys = <T>(record: Record<string, T>) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));

export const QuotasFileSchema = z.strictObject({
  defaults: LimitsSchema.default({}),
  installations: z.record(z.string().min(1), InstallationQuotaSchema).default({}).transform(lowerKeys),
  repositories: z
    .record(z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'repositories are named owner/name'), LimitsSchema)
    .default({})
    .transform(lowerKeys),
});
export type QuotasConfig = z.infer<typeof QuotasFileSchema>;

/** The limits that bind one tenant: its installation's, and its repository's (the stricter of the two). */
export interface TenantLimits {
  installation: Limits;
  repository: Limits;
}

export function limitsFor(cfg: QuotasConfig, t: Tenant): TenantLimits {
  const inst = cfg.installations[t.installation] ?? {};
  const repo = cfg.repositories[t.repository] ?? {};
  const installation: Limits = {};
  const repository: Limits = {};
  for (const q of QUOTA_NAMES) {
    const i = inst[q] ?? cfg.defaults[q];
    const r = repo[q] ?? cfg.defaults[q];
    if (i !== undefined) installation[q] = i;
    const strictest = [i, r].filter((v): v is number => v !== undefined);
    if (strictest.length) repository[q] = Math.min(...strictest);
  }
  return { installation, repository };
}

/** The runner-seconds one run of this tenant holds until it ends: the repository's, installation's or default value. */
export function holdSecondsFor(cfg: QuotasConfig, t: Tenant): number {
  return (
    cfg.repositories[t.repository]?.holdSecondsPerRun ??
    cfg.installations[t.installation]?.holdSecondsPerRun ??
    cfg.defaults.holdSecondsPerRun ??
    DEFAULT_HOLD_SECONDS
  );
}

/** Fair-share weights by installation login (installations not named weigh 1). */
export function weightsOf(cfg: QuotasConfig | null): Map<string, number> {
  const weights = new Map<string, number>();
  for (const [login, q] of Object.entries(cfg?.installations ?? {})) if (q.weight) weights.set(login, q.weight);
  return weights;
}
