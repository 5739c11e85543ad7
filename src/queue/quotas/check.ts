import type { Redis } from 'ioredis';
import type { Tenant } from '../fairShare/tenants.js';
import { limitsFor, type QuotaName, type QuotasConfig } from './schema.js';
import { periodEnd, runnerSecondsUsed, takeRun, type Period } from './store.js';

/** Why a run may not start now: which quota, whose, what was used, the limit, when it resets. */
export interface QuotaRefusal {
  quota: QuotaName;
  scope: 'installation' | 'repository';
  /** The installation login or the repository's owner/name. */
  tenant: string;
  used: number;
  limit: number;
  resetAt: Date;
}

const LEDGER_QUOTAS: [QuotaName, Period][] = [
  ['runnerSecondsPerDay', 'day'],
  ['runnerSecondsPerMonth', 'month'],
];

/**
 * Checks the runner-seconds ledgers, then takes one run from the hourly buckets (only when the ledgers allow it,
 * so a refused ask costs no run). Returns null when the run may be queued.
 */
export async function checkQuotas(
  redis: Redis,
  cfg: QuotasConfig,
  t: Tenant,
  now = new Date(),
): Promise<QuotaRefusal | null> {
  const limits = limitsFor(cfg, t);
  for (const [quota, period] of LEDGER_QUOTAS) {
    const inst = limits.installation[quota];
    const repo = limits.repository[quota];
    if (inst === undefined && repo === undefined) continue;
    const used = await runnerSecondsUsed(redis, t, period, now);
    const resetAt = periodEnd(period, now);
    if (inst !== undefined && used.installation >= inst) {
      return {
        quota,
        scope: 'installation',
        tenant: t.installation,
        used: Math.round(used.installation),
        limit: inst,
        resetAt,
      };
    }
    if (repo !== undefined && used.repository >= repo) {
      return {
        quota,
        scope: 'repository',
        tenant: t.repository,
        used: Math.round(used.repository),
        limit: repo,
        resetAt,
      };
    }
  }
  const caps = { installation: limits.installation.runsPerHour, repository: limits.repository.runsPerHour };
  if (caps.installation === undefined && caps.repository === undefined) return null;
  const run = await takeRun(redis, t, caps, now);
  if (run.taken) return null;
  const limit = (run.scope === 'installation' ? caps.installation : caps.repository)!;
  const tenant = run.scope === 'installation' ? t.installation : t.repository;
  return { quota: 'runsPerHour', scope: run.scope, tenant, used: run.used, limit, resetAt: run.resetAt };
}
