import type { Redis } from 'ioredis';
import type { Tenant } from '../fairShare/tenants.js';
import { botKey } from '../keys.js';

/**
 * What tenants used, in Redis: a token bucket of runs per hour and a ledger of runner-seconds per UTC day and
 * month, under the bot's key prefix (one Cluster slot, see keys.ts).
 */

const HOUR_MS = 3600_000;
const DAY_KEEP_SECONDS = 3 * 24 * 3600;
const MONTH_KEEP_SECONDS = 63 * 24 * 3600;

function bucketKey(t: Tenant, scope: 'installation' | 'repository'): string {
  return botKey('quota', t.installation, 'runs', scope === 'installation' ? '*' : t.repository);
}

export type Period = 'day' | 'month';

/** `2026-12-03` / `2026-12` (UTC). */
export function periodId(period: Period, at: Date): string {
  return at.toISOString().slice(0, period === 'day' ? 10 : 7);
}

/** When the UTC day or month that contains `at` ends. */
export function periodEnd(period: Period, at: Date): Date {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  return period === 'day' ? new Date(Date.UTC(y, m, at.getUTCDate() + 1)) : new Date(Date.UTC(y, m + 1, 1));
}

export function ledgerKey(t: Tenant, period: Period, at: Date): string {
  return botKey('usage', t.installation, period, periodId(period, at));
}

/**
 * Adds the time a job held a runner to its installation's (field `*`) and repository's ledgers; `also` adds commands
 * to the same transaction (the settle of the job's hold).
 */
export async function recordRunnerSeconds(
  redis: Redis,
  t: Tenant,
  seconds: number,
  at = new Date(),
  also?: (tx: ReturnType<Redis['multi']>) => void,
): Promise<void> {
  const tx = redis.multi();
  also?.(tx);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    if (also) await tx.exec();
    return;
  }
  for (const [period, keep] of [
    ['day', DAY_KEEP_SECONDS],
    ['month', MONTH_KEEP_SECONDS],
  ] as const) {
    const key = ledgerKey(t, period, at);
    tx.hincrbyfloat(key, '*', seconds).hincrbyfloat(key, t.repository, seconds).expire(key, keep);
  }
  await tx.exec();
}

/** Runner-seconds used in the period that contains `at`: the installation's and the repository's. */
export async function runnerSecondsUsed(
  redis: Redis,
  t: Tenant,
  period: Period,
  at = new Date(),
): Promise<{ installation: number; repository: number }> {
  const [inst, repo] = await redis.hmget(ledgerKey(t, period, at), '*', t.repository);
  return { installation: Number(inst ?? 0), repository: Number(repo ?? 0) };
}

/**
 * KEYS: installation bucket, repository bucket. ARGV: now (ms), installation capacity, repository capacity
 * (-1: no limit), refill period (ms), dry ('1': only look). Takes one run from both buckets, or from neither: returns 0 when taken,
 * else {which bucket (1|2), tokens left (as a string), ms until one run is back}.
 */
const TAKE = `
local now, period, dry = tonumber(ARGV[1]), tonumber(ARGV[4]), ARGV[5] == '1'
local caps = { tonumber(ARGV[2]), tonumber(ARGV[3]) }
local tokens = {}
for i = 1, 2 do
  if caps[i] >= 0 then
    local b = redis.call('HMGET', KEYS[i], 'tokens', 'at')
    local t, at = tonumber(b[1]), tonumber(b[2])
    if not t then t, at = caps[i], now end
    t = math.min(caps[i], t + (now - at) * caps[i] / period)
    tokens[i] = t
    if t < 1 then
      local wait = caps[i] > 0 and math.ceil((1 - t) * period / caps[i]) or period
      return { i, tostring(t), wait }
    end
  end
end
if dry then return 0 end
for i = 1, 2 do
  if caps[i] >= 0 then
    redis.call('HSET', KEYS[i], 'tokens', tokens[i] - 1, 'at', now)
    redis.call('PEXPIRE', KEYS[i], period * 2)
  end
end
return 0
`;

export type RunTaken =
  { taken: true } | { taken: false; scope: 'installation' | 'repository'; used: number; resetAt: Date };

/**
 * Takes one run from the hourly buckets (capacity: runs per hour, refilled evenly over the hour); `dry` only says
 * whether one could be taken.
 */
export async function takeRun(
  redis: Redis,
  t: Tenant,
  caps: { installation?: number; repository?: number },
  now = new Date(),
  dry = false,
): Promise<RunTaken> {
  const res = (await redis.eval(
    TAKE,
    2,
    bucketKey(t, 'installation'),
    bucketKey(t, 'repository'),
    String(now.getTime()),
    String(caps.installation ?? -1),
    String(caps.repository ?? -1),
    String(HOUR_MS),
    dry ? '1' : '0',
  )) as 0 | [number, string, number];
  if (res === 0) return { taken: true };
  const [which, left, waitMs] = res;
  const scope = which === 1 ? 'installation' : 'repository';
  const cap = (scope === 'installation' ? caps.installation : caps.repository) ?? 0;
  return {
    taken: false,
    scope,
    used: Math.max(0, Math.round(cap - Number(left))),
    resetAt: new Date(now.getTime() + waitMs),
  };
}
