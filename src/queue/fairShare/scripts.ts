import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * The fair-share state lives in Redis and changes only inside these Lua scripts, so every change is atomic
 * and any number of app replicas (and runners) may run them at once.
 *
 * Layout under `root` (`<bull prefix>:frognano:fs`), per class `c0` (follow-up rounds) and `c1` (fresh work):
 *   `<c>:inst`            zset installation -> pass (stride scheduling: the lowest pass goes next)
 *   `<c>:repos:<inst>`    zset repository -> pass, inside one installation
 *   `<c>:jobs:<repo>`     zset job id -> arrival sequence (FIFO inside a repository)
 *   `<c>:ipass`, `<c>:rpass:<inst>`  hashes: the pass a tenant had when it ran out of work (its debt)
 *   `<c>:vt`, `<c>:rvt`   virtual time: the pass last served, where a tenant that comes back starts
 *   `where`               hash job id -> `class|installation|repository` (for removal)
 *   `weights`             hash installation -> weight (written by the app from the quotas file)
 *   `dispatching`         zset job id -> ms: picked, not yet promoted; counted as a used slot
 *   `ending`              zset job id -> ms: active jobs whose runner has finished the model work (hand-off)
 *   `slots`               the model slots the app last counted (a runner's hand-off uses it)
 * Dynamic keys are built from `root`, as BullMQ builds job keys from its prefix: on a Redis Cluster the
 * BullMQ prefix must carry a hash tag (`{bull}`) so the queue's keys and these share one slot.
 */

/** Runs a script by its SHA1 (sent in full only the first time a Redis server sees it). */
export async function runScript(redis: Redis, script: string, keys: string[], args: string[]): Promise<unknown> {
  const sha = createHash('sha1').update(script).digest('hex');
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
    return redis.eval(script, keys.length, ...keys, ...args);
  }
}

/**
 * Pass a weight-1 tenant advances per job; a tenant of weight w advances floor(STRIDE / w). Integer passes keep
 * Lua (which writes numbers with 14 digits) and the JavaScript replay of the order (positions) exact. 720720 is
 * divisible by 1..16, so common weights divide it evenly.
 */
export const STRIDE = 720720;

const ACTIVATE = `
local function activate(zkey, member, lastHash, vt)
  if redis.call('ZSCORE', zkey, member) then return end
  local last = tonumber(redis.call('HGET', lastHash, member) or '0')
  local start = tonumber(vt or '0')
  if last > start then start = last end
  redis.call('ZADD', zkey, start, member)
end
`;

/** ARGV: root, class, installation, repository, jobId. Returns 1 when held, 0 when it already was. */
export const HOLD = `${ACTIVATE}
local root, class, inst, repo, jobId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('HEXISTS', root .. ':where', jobId) == 1 then return 0 end
if redis.call('ZSCORE', root .. ':dispatching', jobId) then return 0 end
local c = root .. ':' .. class
local seq = redis.call('INCR', root .. ':seq')
redis.call('ZADD', c .. ':jobs:' .. repo, seq, jobId)
redis.call('HSET', root .. ':where', jobId, class .. '|' .. inst .. '|' .. repo)
activate(c .. ':repos:' .. inst, repo, c .. ':rpass:' .. inst, redis.call('HGET', c .. ':rvt', inst))
activate(c .. ':inst', inst, c .. ':ipass', redis.call('GET', c .. ':vt'))
return 1
`;

const RETIRE = `
local function retire(zkey, member, lastHash, pass)
  redis.call('ZREM', zkey, member)
  redis.call('HSET', lastHash, member, pass)
end
`;

/** ARGV: root, jobId. Takes a held job out of line (cancelled). Returns 1 when it was held. */
export const FORGET = `${RETIRE}
local root, jobId = ARGV[1], ARGV[2]
local where = redis.call('HGET', root .. ':where', jobId)
if not where then return 0 end
redis.call('HDEL', root .. ':where', jobId)
local class, inst, repo = string.match(where, '^([^|]+)|([^|]+)|(.+)$')
local c = root .. ':' .. class
local jobsKey, reposKey = c .. ':jobs:' .. repo, c .. ':repos:' .. inst
redis.call('ZREM', jobsKey, jobId)
if redis.call('ZCARD', jobsKey) == 0 then
  local p = redis.call('ZSCORE', reposKey, repo)
  if p then retire(reposKey, repo, c .. ':rpass:' .. inst, p) end
end
if redis.call('ZCARD', reposKey) == 0 then
  local p = redis.call('ZSCORE', c .. ':inst', inst)
  if p then retire(c .. ':inst', inst, c .. ':ipass', p) end
end
return 1
`;

/**
 * Active jobs marked as ending (their runner is done with the model and about to report) free their slot early,
 * so the next job is already waiting when the runner asks BullMQ for it. A mark counts only while its job is
 * still active, and for a minute at most (a runner that died right after marking).
 */
const ENDING = `
local function endingCount(endingKey, activeKey, cutoff)
  local n = 0
  local marks = redis.call('ZRANGE', endingKey, 0, -1, 'WITHSCORES')
  for i = 1, #marks, 2 do
    if tonumber(marks[i + 1]) < cutoff or not redis.call('LPOS', activeKey, marks[i]) then
      redis.call('ZREM', endingKey, marks[i])
    else
      n = n + 1
    end
  end
  return n
end
`;

/**
 * KEYS: BullMQ wait, active, prioritized, then our dispatching and ending zsets. ARGV: root, slots ('' = the
 * count the app last stored), now (ms), stride, and optionally an active job to mark as ending first. Picks the next job by fair share when fewer than `slots` jobs are
 * waiting or running (less those ending), and marks it as dispatching (so it counts as a used slot until the
 * caller has promoted it). Returns {jobId, inst, repo} or false.
 */
export const PICK = `${RETIRE}${ENDING}
local root, now, stride = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
local slots = tonumber(ARGV[2])
if ARGV[5] and ARGV[5] ~= '' then redis.call('ZADD', KEYS[5], now, ARGV[5]) end
if slots then redis.call('SET', root .. ':slots', slots) else slots = tonumber(redis.call('GET', root .. ':slots') or '1') end
local used = redis.call('LLEN', KEYS[1]) + redis.call('LLEN', KEYS[2]) + redis.call('ZCARD', KEYS[3])
  + redis.call('ZCARD', KEYS[4]) - endingCount(KEYS[5], KEYS[2], now - 60000)
if used >= slots then return false end
for _, class in ipairs({'c0', 'c1'}) do
  local c = root .. ':' .. class
  for _ = 1, 1000 do
    local top = redis.call('ZRANGE', c .. ':inst', 0, 0, 'WITHSCORES')
    if #top == 0 then break end
    local inst, ipass = top[1], tonumber(top[2])
    local reposKey = c .. ':repos:' .. inst
    local rtop = redis.call('ZRANGE', reposKey, 0, 0, 'WITHSCORES')
    if #rtop == 0 then
      retire(c .. ':inst', inst, c .. ':ipass', ipass)
    else
      local repo, rpass = rtop[1], tonumber(rtop[2])
      local jobsKey = c .. ':jobs:' .. repo
      local jobId = redis.call('ZRANGE', jobsKey, 0, 0)[1]
      if not jobId then
        retire(reposKey, repo, c .. ':rpass:' .. inst, rpass)
      else
        redis.call('ZREM', jobsKey, jobId)
        redis.call('HDEL', root .. ':where', jobId)
        redis.call('ZADD', KEYS[4], now, jobId)
        redis.call('SET', c .. ':vt', ipass)
        redis.call('HSET', c .. ':rvt', inst, rpass)
        if redis.call('ZCARD', jobsKey) == 0 then retire(reposKey, repo, c .. ':rpass:' .. inst, rpass + stride)
        else redis.call('ZADD', reposKey, rpass + stride, repo) end
        local weight = tonumber(redis.call('HGET', root .. ':weights', inst) or '1') or 1
        local istride = math.floor(stride / weight)
        if redis.call('ZCARD', reposKey) == 0 then retire(c .. ':inst', inst, c .. ':ipass', ipass + istride)
        else redis.call('ZADD', c .. ':inst', ipass + istride, inst) end
        return {jobId, inst, repo}
      end
    end
  end
end
return false
`;

/**
 * ARGV: root, max jobs per repository, then optionally an installation and a repository whose idle state
 * (debt, virtual time) is wanted. Returns the whole line as JSON, read in one atomic step.
 */
export const SNAPSHOT = `
local root, maxJobs, wantInst, wantRepo = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local out = { classes = {}, weights = redis.call('HGETALL', root .. ':weights') }
for _, class in ipairs({'c0', 'c1'}) do
  local c = root .. ':' .. class
  local snap = { name = class, insts = {}, vt = redis.call('GET', c .. ':vt') or '0' }
  local insts = redis.call('ZRANGE', c .. ':inst', 0, -1, 'WITHSCORES')
  for i = 1, #insts, 2 do
    local inst = { name = insts[i], pass = insts[i + 1], repos = {} }
    local repos = redis.call('ZRANGE', c .. ':repos:' .. inst.name, 0, -1, 'WITHSCORES')
    for j = 1, #repos, 2 do
      local jobs = redis.call('ZRANGE', c .. ':jobs:' .. repos[j], 0, maxJobs - 1)
      table.insert(inst.repos, { name = repos[j], pass = repos[j + 1], jobs = jobs })
    end
    table.insert(snap.insts, inst)
  end
  if wantInst and wantInst ~= '' then
    snap.idle = {
      ipass = redis.call('HGET', c .. ':ipass', wantInst) or '0',
      rpass = redis.call('HGET', c .. ':rpass:' .. wantInst, wantRepo) or '0',
      rvt = redis.call('HGET', c .. ':rvt', wantInst) or '0',
    }
  end
  table.insert(out.classes, snap)
end
return cjson.encode(out)
`;
