/**
 * `frognano eval --queue`: each instance becomes a job on the runners' BullMQ queue (an eval round,
 * src/runner/evalRound.ts), through the fair share and the quotas as the app queues an issue; the CLI waits for the
 * jobs and writes their predictions, records and trajectories into --out as the local path does. Job ids are
 * deterministic (the run id kept in --out, the instance id), so a second run adds no job twice and collects what the
 * first left running. Ctrl-C stops waiting only: the queued jobs keep running on the runners.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Instance } from '../../eval/instance.js';
import { errorRecord } from '../../eval/runInstance.js';
import { renderTrajectoryMarkdown, type Trajectory } from '../../leaf/trajectory.js';
import { createRedisConnection } from '../../queue/connection.js';
import { dropEvalResult, readEvalResult } from '../../queue/evalResults.js';
import { FairShare, fairShareEnabled } from '../../queue/fairShare/dispatcher.js';
import { tenantOf } from '../../queue/fairShare/tenants.js';
import { setBotKeyPrefix } from '../../queue/keys.js';
import { createQueue, enqueueJob, isUnfinishedState, type FrognanoQueue } from '../../queue/queue.js';
import { admitRun, type QuotaRefusal } from '../../queue/quotas/check.js';
import { readPublishedQuotas } from '../../queue/quotas/published.js';
import { redisConfigFromEnv } from '../../queue/redisConfig.js';
import { EVAL_TENANT, evalJobData, jobIdFor, type EvalJob, type JobData } from '../../queue/schema.js';
import { setupError } from '../exitCodes.js';
import { FILES, instanceDir, PredictionWriter, writeJsonAtomic, writeRecord } from './outputs.js';
import type { EvalProgress } from './progress.js';

/**
 * How often the CLI looks at its jobs (and kicks the fair share's dispatcher, as any app replica would): every
 * second for a few jobs, less often for many (each look is two Redis calls per job), at most every 10 s.
 */
const pollMs = (pending: number) => Math.min(10_000, Math.max(1000, pending * 20));

const QueueFileSchema = z.object({ runId: z.string().regex(/^[0-9a-f]{16}$/), tenant: z.string().regex(EVAL_TENANT) });

/** The tenant a run is charged to: --tenant (as `eval:<name>` or `<name>`), else `eval:<--out's folder name>`. */
export function evalTenant(given: string | undefined, out: string): string {
  const name = (given ?? path.basename(out))
    .replace(/^eval:/, '')
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64);
  const tenant = `eval:${name || 'run'}`;
  if (!EVAL_TENANT.test(tenant)) throw setupError(`not a tenant name: ${given ?? out}`);
  return tenant;
}

/** The run id and tenant of --out: read back on a resume (a different --tenant is refused), made on the first run. */
export async function queueIdentity(out: string, tenant: string, given: boolean) {
  const file = path.join(out, FILES.queue);
  const text = await fs.readFile(file, 'utf8').catch(() => undefined);
  if (text !== undefined) {
    const r = QueueFileSchema.safeParse(JSON.parse(text));
    if (!r.success) throw setupError(`${file} is not frognano's`, 'remove it to start a new queued run');
    if (given && r.data.tenant !== tenant)
      throw setupError(`${out} was queued as ${r.data.tenant}, not ${tenant}`, 'drop --tenant or use another --out');
    return r.data;
  }
  const made = { runId: randomBytes(8).toString('hex'), tenant };
  await writeJsonAtomic(file, made);
  return made;
}

export interface QueuedRun {
  out: string;
  todo: Instance[];
  runId: string;
  tenant: string;
  imageFor: (id: string) => string;
  activation: string;
  /** --model-name; absent: the name the runner's model reports. */
  modelName?: string;
  env: NodeJS.ProcessEnv;
  progress: EvalProgress;
  signal: AbortSignal;
}

export interface QueuedOutcome {
  /** Instances not queued because a quota refused them (they run on a later run). */
  overQuota: number;
  refusal?: QuotaRefusal;
  /** Jobs still queued or running when the CLI stopped waiting (Ctrl-C). */
  left: number;
}

interface Conn {
  redis: Redis;
  queue: FrognanoQueue;
  fair?: FairShare;
}

function connect(env: NodeJS.ProcessEnv): Conn {
  let cfg;
  try {
    cfg = redisConfigFromEnv(env);
  } catch (err) {
    throw setupError((err as Error).message, 'fix REDIS_URL and the other Redis settings');
  }
  setBotKeyPrefix(cfg.keyPrefix);
  const redis = createRedisConnection(cfg.target);
  const queue = createQueue(redis, cfg.queuePrefix ? { prefix: cfg.queuePrefix } : {});
  const fair = fairShareEnabled(env) ? new FairShare(queue, redis, {}) : undefined;
  return { redis, queue, fair };
}

/** Queues what is not queued yet, waits for every job, writes each result into --out as it comes. */
export async function runQueued(run: QueuedRun): Promise<QueuedOutcome> {
  const conn = connect(run.env);
  try {
    await conn.redis.ping().catch((err: Error) => {
      throw setupError(`Redis is not reachable: ${err.message}`, "set REDIS_URL to the runners' Redis");
    });
    const { ids, overQuota, refusal } = await enqueueAll(conn, run);
    const left = await collectAll(conn, run, ids);
    return { overQuota, refusal, left };
  } finally {
    await conn.queue.close().catch(() => undefined);
    conn.redis.disconnect();
  }
}

function jobFor(run: QueuedRun, instance: Instance): JobData {
  const job: EvalJob = {
    tenant: run.tenant,
    runId: run.runId,
    instance: {
      instance_id: instance.instance_id,
      repo: instance.repo,
      base_commit: instance.base_commit,
      problem_statement: instance.problem_statement,
    },
    image: run.imageFor(instance.instance_id),
    activation: run.activation,
  };
  return evalJobData(job, new Date().toISOString());
}

/**
 * Each instance's job, unless it is already there (queued or running for this --out: not added twice); a finished
 * job whose result was collected (an error) is removed first, so the instance runs again. Quotas are checked as
 * the app checks an issue's: a refused instance is not queued, nor any after it.
 */
async function enqueueAll(conn: Conn, run: QueuedRun) {
  const ids = new Map<string, string>();
  let found = 0;
  let overQuota = 0;
  let refusal: QuotaRefusal | undefined;
  const quotas = await readPublishedQuotas(conn.redis);
  for (const instance of run.todo) {
    const data = jobFor(run, instance);
    const jobId = jobIdFor(data);
    const existing = await conn.queue.getJob(jobId);
    const state = existing ? await existing.getState() : undefined;
    // Queued or running for this --out, or finished while the CLI was away: waited for and collected, not added.
    if (state && (isUnfinishedState(state) || (state === 'completed' && (await readEvalResult(conn.redis, jobId))))) {
      ids.set(instance.instance_id, jobId);
      found++;
      continue;
    }
    if (existing) await existing.remove();
    if (refusal) {
      overQuota++;
      continue;
    }
    if (quotas) {
      const start = { jobId, jobKeyPrefix: conn.queue.toKey('') };
      refusal = (await admitRun(conn.redis, quotas, tenantOf(data), start)) ?? undefined;
      if (refusal) {
        overQuota++;
        continue;
      }
    }
    await (conn.fair ? conn.fair.enqueue(data) : enqueueJob(conn.queue, data));
    ids.set(instance.instance_id, jobId);
  }
  run.progress.note(
    `${ids.size - found} job(s) added, ${found} already on the queue from an earlier run of this --out`,
  );
  return { ids, overQuota, refusal };
}

/** Waits for the jobs, writing each result as it comes; returns how many were left when Ctrl-C stopped it. */
async function collectAll(conn: Conn, run: QueuedRun, ids: Map<string, string>): Promise<number> {
  const pending = new Map(ids);
  const started = new Set<string>();
  const writer = new PredictionWriter(run.out);
  while (pending.size && !run.signal.aborted) {
    if (conn.fair) await conn.fair.kick();
    let active = 0;
    for (const [instanceId, jobId] of pending) {
      const job = await conn.queue.getJob(jobId);
      const state = job ? await job.getState() : 'missing';
      if (state === 'active') {
        active++;
        if (!started.has(instanceId)) {
          started.add(instanceId);
          run.progress.start(instanceId);
        }
      }
      if (state !== 'completed' && state !== 'failed' && state !== 'missing') continue;
      if (!started.has(instanceId)) run.progress.start(instanceId);
      const ms = job?.finishedOn && job.processedOn ? job.finishedOn - job.processedOn : 0;
      const what = await collect(conn, run, writer, { instanceId, jobId, state, failed: job?.failedReason });
      run.progress.finish(instanceId, what, ms);
      pending.delete(instanceId);
      if (job) await job.remove().catch(() => undefined);
    }
    run.progress.parallel(active);
    if (pending.size) await sleep(pollMs(pending.size), run.signal);
  }
  return pending.size;
}

/** One finished job into --out: its record, its prediction, its trajectory; says what it came to. */
async function collect(
  conn: Conn,
  run: QueuedRun,
  writer: PredictionWriter,
  j: { instanceId: string; jobId: string; state: string; failed?: string },
): Promise<string> {
  const instance = run.todo.find((i) => i.instance_id === j.instanceId)!;
  const result = await readEvalResult(conn.redis, j.jobId);
  if (!result) {
    const why =
      j.state === 'failed'
        ? `the runner failed the job: ${j.failed ?? 'no reason'}`
        : `no result stored for job ${j.jobId} (${j.state})`;
    const record = errorRecord(instance, run.imageFor(instance.instance_id), why);
    await writeRecord(run.out, record);
    return `error: ${why}`;
  }
  const record = { ...result.record, instance_id: instance.instance_id };
  const dir = instanceDir(run.out, instance.instance_id);
  await fs.mkdir(dir, { recursive: true });
  if (result.trajectory) await writeTrajectory(dir, result.trajectory);
  // The record first: a prediction line without its record would be a finished instance the summary cannot count.
  await writeRecord(run.out, record);
  if (result.prediction && record.status === 'finished') {
    const model_patch = result.prediction.model_patch;
    await fs.writeFile(path.join(dir, 'changes.patch'), model_patch);
    const model_name_or_path = run.modelName ?? result.prediction.model_name_or_path;
    await writer.append({ instance_id: instance.instance_id, model_name_or_path, model_patch });
  }
  await dropEvalResult(conn.redis, j.jobId);
  if (record.status === 'error') return `error: ${record.error ?? record.exit_reason}`;
  return `${record.patch_bytes ? 'patch' : 'no patch'} (${record.exit_reason}, ${record.turns} turns)`;
}

async function writeTrajectory(dir: string, text: string): Promise<void> {
  await fs.writeFile(path.join(dir, 'trajectory.json'), text);
  try {
    await fs.writeFile(path.join(dir, 'trajectory.md'), renderTrajectoryMarkdown(JSON.parse(text) as Trajectory));
  } catch {
    // The JSON is the trajectory; the Markdown is a convenience a runner of another version may not allow.
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
