import type { Redis } from 'ioredis';
import type { Tenant } from '../fairShare/tenants.js';
import { holdRunnerSeconds, releaseHold } from './holds.js';
import { holdSecondsFor, limitsFor, type QuotaName, type QuotasConfig, type TenantLimits } from './schema.js';
import { periodEnd, takeRun, type Period } from './store.js';

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
  const refusal = await holdFor(redis, limits, t, { ...start, seconds: holdSecondsFor(cfg, t) }, now);
  if (refusal) return refusal;
  const noRun = await runsPerHour(redis, limits, t, now, false);
  if (noRun) await releaseHold(redis, t, start.jobId);
  return noRun;
}

/**
 * Whether a run could be admitted now, taking nothing: for an ask that will wait for a running round (it is charged
 * when the round that takes it starts). Refused when a day or month has no second left (runs in progress counted)
 * or the hourly bucket is empty. Holds whose jobs ended are swept as by an admission.
 */
export async function checkQuotas(
  redis: Redis,
  cfg: QuotasConfig,
  t: Tenant,
  jobKeyPrefix: string,
  now = new Date(),
): Promise<QuotaRefusal | null> {
  const limits = limitsFor(cfg, t);
  const refusal = await holdFor(redis, limits, t, { jobId: null, jobKeyPrefix, seconds: 1 }, now);
  return refusal ?? runsPerHour(redis, limits, t, now, true);
}

/** Holds (or, without a job id, looks for room for) `seconds` against the day and month limits. */
async function holdFor(
  redis: Redis,
  limits: TenantLimits,
  t: Tenant,
  o: { jobId: string | null; jobKeyPrefix: string; seconds: number },
  now: Date,
): Promise<QuotaRefusal | null> {
  const { installation: inst, repository: repo } = limits;
  const held = await holdRunnerSeconds(redis, t, {
    ...o,
    limits: {
      day: { installation: inst.runnerSecondsPerDay, repository: repo.runnerSecondsPerDay },
      month: { installation: inst.runnerSecondsPerMonth, repository: repo.runnerSecondsPerMonth },
    },
    now,
  });
  if (held.held) return null;
  const [quota, period] = held.period === 'day' ? LEDGER_QUOTAS[0]! : LEDGER_QUOTAS[1]!;
  return {
    quota,
    scope: held.scope,
    tenant: held.scope === 'installation' ? t.installation : t.repository,
    used: held.used,
    limit: limits[held.scope][quota]!,
    resetAt: periodEnd(period, now),
    inFlight: held.inFlight,
  };
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
