import type { Redis } from 'ioredis';
import type { Tenant } from '../fairShare/tenants.js';
import { botKey } from '../keys.js';
import { ledgerKey, recordRunnerSeconds } from './store.js';

/**
 * Runner-seconds held by runs that have started but not ended (docs/operating-at-scale.md, "Quotas"). A run holds
 * its estimate from the moment it is accepted; when it ends the runner settles it (the hold goes, the seconds it
 * really used are written to the ledger). A hold whose run ended without a settle (its runner crashed and BullMQ
 * failed the job, or the job was removed) is dropped by the next reservation that looks: its BullMQ job is gone or
 * finished. A hold also expires after `holdSeconds`, the last resort when nobody ever looks at its job again.
 */

/** A hold younger than this is kept even when its job does not exist yet (the job is added right after the hold). */
export const HOLD_GRACE_MS = 5 * 60_000;
/** The last resort: a hold nobody settled or swept goes after this long. */
export const HOLD_MAX_SECONDS = 24 * 3600;

function holdsKey(installation: string): string {
  return botKey('quota', installation, 'held');
}

/**
 * KEYS: holds hash, day ledger, month ledger. ARGV: now (ms), BullMQ job key prefix (`bull:frognano:`), grace (ms),
 * job id, repository, seconds to hold, hold expiry (ms), then four limits (installation day, repository day,
 * installation month, repository month; -1: none).
 * A hold is `seconds \t repository \t expires \t created`. Sweeps ended holds, then holds `seconds` for the job when
 * every limit has room for it (a hold counts as at most the limit, so a limit below the estimate still lets one run
 * at a time). An empty job id only looks (sweeps, checks, holds nothing). Returns 0 (held, or already held by this
 * job), else {limit index (1-4), used, held}.
 */
const RESERVE = `
local now, prefix, grace = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local job, repo, seconds, expires = ARGV[4], ARGV[5], tonumber(ARGV[6]), ARGV[7]
local entries = redis.call('HGETALL', KEYS[1])
local heldInst, heldRepo, mine = 0, 0, false
for i = 1, #entries, 2 do
  local id, v = entries[i], entries[i + 1]
  local s, r, e, c = string.match(v, '^([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)$')
  local ended = (not s) or tonumber(e) <= now
  if not ended and now - tonumber(c) > grace then
    local jobKey = prefix .. id
    ended = redis.call('EXISTS', jobKey) == 0 or redis.call('HEXISTS', jobKey, 'finishedOn') == 1
  end
  if ended then
    redis.call('HDEL', KEYS[1], id)
  elseif id == job then
    mine = true
  else
    heldInst = heldInst + tonumber(s)
    if r == repo then heldRepo = heldRepo + tonumber(s) end
  end
end
if mine then return 0 end
local dry = job == ''
local used = {
  tonumber(redis.call('HGET', KEYS[2], '*') or '0'), tonumber(redis.call('HGET', KEYS[2], repo) or '0'),
  tonumber(redis.call('HGET', KEYS[3], '*') or '0'), tonumber(redis.call('HGET', KEYS[3], repo) or '0'),
}
local held = { heldInst, heldRepo, heldInst, heldRepo }
for i = 1, 4 do
  local limit = tonumber(ARGV[7 + i])
  if limit >= 0 and used[i] + held[i] + math.min(seconds, limit) > limit then
    return { i, tostring(used[i]), tostring(held[i]) }
  end
end
if dry then return 0 end
redis.call('HSET', KEYS[1], job, seconds .. '\\t' .. repo .. '\\t' .. expires .. '\\t' .. now)
redis.call('EXPIRE', KEYS[1], ${HOLD_MAX_SECONDS * 2})
return 0
`;

export interface LedgerLimits {
  day: { installation?: number; repository?: number };
  month: { installation?: number; repository?: number };
}

export type HoldResult =
  | { held: true }
  | { held: false; period: 'day' | 'month'; scope: 'installation' | 'repository'; used: number; inFlight: number };

/**
 * Holds `seconds` for `jobId` against the tenant's day and month limits, atomically: concurrent starts never hold
 * more than the limits allow. `jobKeyPrefix` is the BullMQ queue's key prefix (`queue.toKey('')`), to see which
 * holds' jobs have ended. Holding again for a job that holds already is a no-op. `jobId: null` only looks: whether
 * `seconds` would fit now (ended holds are swept all the same).
 */
export async function holdRunnerSeconds(
  redis: Redis,
  t: Tenant,
  o: { jobId: string | null; jobKeyPrefix: string; seconds: number; limits: LedgerLimits; now?: Date },
): Promise<HoldResult> {
  const now = o.now ?? new Date();
  const lim = (n?: number) => String(n ?? -1);
  const res = (await redis.eval(
    RESERVE,
    3,
    holdsKey(t.installation),
    ledgerKey(t, 'day', now),
    ledgerKey(t, 'month', now),
    String(now.getTime()),
    o.jobKeyPrefix,
    String(HOLD_GRACE_MS),
    o.jobId ?? '',
    t.repository,
    String(Math.max(0, Math.round(o.seconds))),
    String(now.getTime() + HOLD_MAX_SECONDS * 1000),
    lim(o.limits.day.installation),
    lim(o.limits.day.repository),
    lim(o.limits.month.installation),
    lim(o.limits.month.repository),
  )) as 0 | [number, string, string];
  if (res === 0) return { held: true };
  const [which, used, held] = res;
  return {
    held: false,
    period: which <= 2 ? 'day' : 'month',
    scope: which % 2 === 1 ? 'installation' : 'repository',
    used: Math.round(Number(used)),
    inFlight: Math.round(Number(held)),
  };
}

/** Seconds held now by unfinished runs: the installation's and the repository's (no sweep; for checks and tests). */
export async function heldSeconds(
  redis: Redis,
  t: Tenant,
  now = new Date(),
): Promise<{ installation: number; repository: number; jobs: string[] }> {
  const all = await redis.hgetall(holdsKey(t.installation));
  let installation = 0;
  let repository = 0;
  const jobs: string[] = [];
  for (const [id, v] of Object.entries(all)) {
    const [s, r, e] = v.split('\t');
    if (Number(e) <= now.getTime()) continue;
    installation += Number(s) || 0;
    if (r === t.repository) repository += Number(s) || 0;
    jobs.push(id);
  }
  return { installation, repository, jobs };
}

/** Drops a job's hold (its run was refused after all, never queued, or ended without a usable duration). */
export async function releaseHold(redis: Redis, t: Tenant, jobId: string): Promise<void> {
  await redis.hdel(holdsKey(t.installation), jobId);
}

/** The run ended: its hold goes and the seconds it used are written to the ledger, in one transaction. */
export async function settleHold(redis: Redis, t: Tenant, jobId: string, seconds: number, at = new Date()) {
  await recordRunnerSeconds(redis, t, seconds, at, (tx) => tx.hdel(holdsKey(t.installation), jobId));
}
