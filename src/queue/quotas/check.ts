import type { Redis } from 'ioredis';
import type { Tenant } from '../fairShare/tenants.js';
import { heldSeconds, holdRunnerSeconds, releaseHold } from './holds.js';
import { holdSecondsFor, limitsFor, type QuotaName, type QuotasConfig, type TenantLimits } from './schema.js';
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
  /** Runner-seconds held by this tenant's runs in progress (they free what they do not use when they end). */
  inFlight?: number;
}

const LEDGER_QUOTAS: [QuotaName, Period][] = [
  ['runnerSecondsPerDay', 'day'],
  ['runnerSecondsPerMonth', 'month'],
];

/** What starting one run takes: its job (to hold runner-seconds for) and where BullMQ keeps jobs. */
export interface RunStart {
  jobId: string;
  /** `queue.toKey('')`: a hold whose job is gone or finished there is dropped. */
  jobKeyPrefix: string;
}

/**
 * Admits one run: holds its runner-seconds (holdSecondsPerRun) against the day and month limits and takes one run
 * from the hourly buckets, each atomically in Redis, so runs that start together never pass a limit. A refused run
 * holds and takes nothing. Returns null when the run may be queued.
 */
export async function admitRun(
  redis: Redis,
  cfg: QuotasConfig,
  t: Tenant,
  start: RunStart,
  now = new Date(),
): Promise<QuotaRefusal | null> {
  const limits = limitsFor(cfg, t);
  const held = await holdRunnerSeconds(redis, t, {
    ...start,
    seconds: holdSecondsFor(cfg, t),
    limits: {
      day: { installation: limits.installation.runnerSecondsPerDay, repository: limits.repository.runnerSecondsPerDay },
      month: {
        installation: limits.installation.runnerSecondsPerMonth,
        repository: limits.repository.runnerSecondsPerMonth,
      },
    },
    now,
  });
  if (!held.held) {
    const [quota, period] = held.period === 'day' ? LEDGER_QUOTAS[0]! : LEDGER_QUOTAS[1]!;
    const tenant = held.scope === 'installation' ? t.installation : t.repository;
    const limit = limits[held.scope][quota]!;
    return {
      quota,
      scope: held.scope,
      tenant,
      used: held.used,
      limit,
      resetAt: periodEnd(period, now),
      inFlight: held.inFlight,
    };
  }
  const refusal = await runsPerHour(redis, limits, t, now, false);
  if (refusal) await releaseHold(redis, t, start.jobId);
  return refusal;
}

/**
 * Whether a run could be admitted now, taking nothing: for an ask that will wait for a running round (it is charged
 * when the round that takes it starts). Refused when a day or month is used up (runs in progress counted) or the
 * hourly bucket is empty.
 */
export async function checkQuotas(
  redis: Redis,
  cfg: QuotasConfig,
  t: Tenant,
  now = new Date(),
): Promise<QuotaRefusal | null> {
  const limits = limitsFor(cfg, t);
  const held = await heldSeconds(redis, t, now);
  for (const [quota, period] of LEDGER_QUOTAS) {
    const used = await runnerSecondsUsed(redis, t, period, now);
    for (const scope of ['installation', 'repository'] as const) {
      const limit = limits[scope][quota];
      if (limit === undefined || used[scope] + held[scope] < limit) continue;
      const tenant = scope === 'installation' ? t.installation : t.repository;
      const resetAt = periodEnd(period, now);
      return { quota, scope, tenant, used: Math.round(used[scope]), limit, resetAt, inFlight: held[scope] };
    }
  }
  return runsPerHour(redis, limits, t, now, true);
}

async function runsPerHour(
  redis: Redis,
  limits: TenantLimits,
  t: Tenant,
  now: Date,
  dry: boolean,
): Promise<QuotaRefusal | null> {
  const caps = { installation: limits.installation.runsPerHour, repository: limits.repository.runsPerHour };
  if (caps.installation === undefined && caps.repository === undefined) return null;
  const run = await takeRun(redis, t, caps, now, dry);
  if (run.taken) return null;
  const limit = (run.scope === 'installation' ? caps.installation : caps.repository)!;
  const tenant = run.scope === 'installation' ? t.installation : t.repository;
  return { quota: 'runsPerHour', scope: run.scope, tenant, used: run.used, limit, resetAt: run.resetAt };
}
