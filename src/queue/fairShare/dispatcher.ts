import type { Redis } from 'ioredis';
import { enqueueJob, type EnqueueResult, type FrognanoQueue } from '../queue.js';
import type { JobData } from '../schema.js';
import { fairShareBacklog, fairShareRoot } from './backlog.js';
import { fairOrder, type ClassLine } from './order.js';
import { FORGET, HOLD, PICK, runScript, SNAPSHOT, STRIDE } from './scripts.js';
import { serviceClassOf, tenantOf } from './tenants.js';
import { readSetting } from '../../util/settings.js';

/**
 * Weighted fair share in front of the runners' queue (docs/operating-at-scale.md, "Fair share"). A job is added
 * to the BullMQ queue as a delayed job ("held": runners never see it) and to its tenant's line in Redis; the
 * dispatcher promotes held jobs to waiting, one at a time, in fair order, while fewer jobs than the model slots
 * are waiting or running. The job keeps its id, data and state machine in BullMQ throughout, so dedupe,
 * `/frognano status` and `/frognano cancel` (job.remove()) work on a held job as on a waiting one.
 */

/** How long a held job would wait if no dispatcher ever promoted it (BullMQ then promotes it itself). */
export const HOLD_MS = 30 * 24 * 3600 * 1000;
/** A pick not promoted within this long (its dispatcher died between the two steps) is promoted by the next. */
const STALE_PICK_MS = 30_000;
const SNAPSHOT_JOBS_PER_REPO = 1000;
/** How often a dispatcher looks for held jobs that never got in line, and how many it looks at. */
const STRANDED_SWEEP_MS = 60_000;
const STRANDED_SWEEP_JOBS = 1000;

/** FROGNANO_FAIR_SHARE=off turns the fair share off (jobs go straight into the queue); app and runners read it. */
export function fairShareEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return readSetting(env, 'FROGNANO_FAIR_SHARE') !== 'off';
}

export interface FairShareOptions {
  /**
   * Model slots: the runners' total concurrency (read on each dispatch, so it can follow the fleet). Absent (a
   * runner's hand-off): the count the app last used, stored in Redis.
   */
  slots?: () => number | Promise<number>;
  /** A dispatch started by kick() failed (Redis down): the next kick or tick tries again. */
  onError?: (err: unknown) => void;
}

export interface Dispatched {
  jobId: string;
  installation: string;
  repository: string;
}

/** SNAPSHOT's JSON, loosely: cjson may write empty lists as objects. */
interface Snapshot {
  classes: { name: string; insts: unknown; vt?: string; idle?: Record<string, string> }[];
  weights: unknown;
}

/** cjson writes an empty Lua table as `{}`. */
const list = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);

export class FairShare {
  /** Root of the fair-share keys, beside the queue's own (same prefix, so the same Cluster slot when tagged). */
  readonly root: string;
  private running: Promise<void> | null = null;
  private again = false;
  private recoveredAt = 0;
  private sweptAt = 0;
  private pendingWeights: ReadonlyMap<string, number> | null = null;

  /** `redis`: a plain connection (no ioredis keyPrefix: keys are built inside Lua) to the queue's Redis. */
  constructor(
    readonly queue: FrognanoQueue,
    private readonly redis: Redis,
    private readonly opts: FairShareOptions,
  ) {
    this.root = fairShareRoot(queue.opts.prefix);
  }

  /**
   * Adds the job held (deduped by its deterministic id, as enqueueJob does), puts it in line and starts a
   * dispatch without waiting for it.
   */
  async enqueue(data: JobData): Promise<EnqueueResult> {
    const res = await enqueueJob(this.queue, data, { delayMs: HOLD_MS });
    if (res.created && res.job.id && (await res.job.isDelayed())) {
      await this.hold(res.job.data, res.job.id);
      void this.kick();
    }
    return res;
  }

  /** Runs dispatch() now, or once more after the one in progress; never rejects (errors go to onError). */
  kick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        // Not connected yet (start-up) or reconnecting: commands would fail at once (no offline queue); the tick
        // after the connection is back dispatches, without a failure logged for every tick in between.
        if (this.redis.status !== 'ready') return;
        await this.dispatch();
      } while (this.again);
    })()
      .catch((err: unknown) => this.opts.onError?.(err))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  /** Puts an already-added (delayed) job in its tenant's line. Idempotent. */
  async hold(data: JobData, jobId: string): Promise<boolean> {
    const t = tenantOf(data);
    const args = [this.root, serviceClassOf(data), t.installation, t.repository, jobId];
    return (await runScript(this.redis, HOLD, [this.routeKey()], args)) === 1;
  }

  /** Takes a job out of line (it was cancelled); true when it was in line. */
  async forget(jobId: string): Promise<boolean> {
    return (await runScript(this.redis, FORGET, [this.routeKey()], [this.root, jobId])) === 1;
  }

  /** Installation weights from the quotas file; installations not named weigh 1. */
  async setWeights(weights: ReadonlyMap<string, number>): Promise<void> {
    this.pendingWeights = weights;
    await this.storePendingWeights();
  }

  /** Weights not stored yet (Redis was unreachable) are stored before the next dispatch. */
  private async storePendingWeights(): Promise<void> {
    const weights = this.pendingWeights;
    if (!weights) return;
    const key = `${this.root}:weights`;
    const tx = this.redis.multi().del(key);
    for (const [inst, w] of weights) tx.hset(key, inst.toLowerCase(), String(w));
    await tx.exec();
    if (this.pendingWeights === weights) this.pendingWeights = null;
  }

  /**
   * Moves held jobs to the runners' queue while slots are free, in fair order. Safe to run in several processes
   * at once: each pick is one Lua script that counts waiting, running and just-picked jobs against the slots.
   */
  async dispatch(): Promise<Dispatched[]> {
    const redis = this.redis;
    await this.storePendingWeights();
    // Off the hot path (a freed slot waits on every round trip here): a dead dispatcher's picks are rare.
    if (Date.now() - this.recoveredAt > STALE_PICK_MS / 6) await this.promoteStalePicks(redis);
    if (Date.now() - this.sweptAt > STRANDED_SWEEP_MS) await this.lineUpStranded();
    const slots = this.opts.slots ? String(await this.opts.slots()) : '';
    const moved: Dispatched[] = [];
    for (let next = await this.pickOne(slots); next; next = await this.pickOne(slots)) moved.push(next);
    return moved;
  }

  /** One pick and its promotion; `ending`: an active job to mark as ending in the same step. */
  private async pickOne(slots: string, ending = ''): Promise<Dispatched | null> {
    const k = this.queue.keys;
    const keys = [k.wait!, k.active!, k.prioritized!, this.dispatchingKey(), `${this.root}:ending`];
    const args = [this.root, slots, String(Date.now()), String(STRIDE), ending];
    const picked = (await runScript(this.redis, PICK, keys, args)) as [string, string, string] | null;
    if (!picked) return null;
    const [jobId, installation, repository] = picked;
    await this.promote(this.redis, jobId);
    return { jobId, installation, repository };
  }

  /**
   * The runner of active job `jobId` is done with the model: its slot may go to the next job now, so BullMQ hands
   * that job over in the same call that finishes this one (no extra round trips between two jobs on a runner).
   */
  async handOff(jobId: string): Promise<Dispatched | null> {
    return this.pickOne(this.opts.slots ? String(await this.opts.slots()) : '', jobId);
  }

  /** Held jobs (see fairShareBacklog). */
  backlog(): Promise<number> {
    return fairShareBacklog(this.redis, this.queue.opts.prefix);
  }

  /** 1-based place in line of a held job (after the jobs already waiting in the queue), or undefined. */
  async position(jobId: string): Promise<number | undefined> {
    const { classes, weights } = await this.snapshot();
    const i = fairOrder(classes, weights).indexOf(jobId);
    return i < 0 ? undefined : (await this.waitingCount()) + i + 1;
  }

  /** The place a job for `data` would get if it joined the line now (the status comment is written first). */
  async positionIfAdded(data: JobData): Promise<number> {
    const t = tenantOf(data);
    const { classes, weights, idle } = await this.snapshot(t.installation, t.repository);
    const probe = '\u0000probe';
    const cls = classes.find((c) => c.name === serviceClassOf(data))!;
    const state = idle.get(cls.name)!;
    let inst = cls.insts.find((i) => i.name === t.installation);
    if (!inst) cls.insts.push((inst = { name: t.installation, pass: Math.max(state.ipass, state.vt), repos: [] }));
    const repo = inst.repos.find((r) => r.name === t.repository);
    if (repo) repo.jobs.push(probe);
    else inst.repos.push({ name: t.repository, pass: Math.max(state.rpass, state.rvt), jobs: [probe] });
    return (await this.waitingCount()) + fairOrder(classes, weights).indexOf(probe) + 1;
  }

  /** Scripts that build all their keys from root still name one, so a Redis Cluster routes them to its slot. */
  private routeKey(): string {
    return `${this.root}:where`;
  }

  private dispatchingKey(): string {
    return `${this.root}:dispatching`;
  }

  private async waitingCount(): Promise<number> {
    const redis = this.redis;
    const k = this.queue.keys;
    const [wait, prioritized, picked] = await Promise.all([
      redis.llen(k.wait),
      redis.zcard(k.prioritized),
      redis.zcard(this.dispatchingKey()),
    ]);
    return wait + prioritized + picked;
  }

  /**
   * Delayed -> waiting. A job removed meanwhile (cancelled) or already promoted is passed over; one still delayed
   * after an error (Redis unreachable) stays marked as picked, for the next dispatcher to promote.
   */
  private async promote(redis: Redis, jobId: string): Promise<void> {
    try {
      await this.queue.getBackend().promote(jobId);
    } catch (err) {
      if ((await this.queue.getJobState(jobId)) === 'delayed') throw err;
    }
    await redis.zrem(this.dispatchingKey(), jobId);
  }

  /**
   * Held jobs that never got in line (the app stopped between adding the job and HOLD) are put in line, instead of
   * waiting out HOLD_MS. HOLD passes over a job already in line or picked. Returns how many it lined up.
   */
  async lineUpStranded(): Promise<number> {
    this.sweptAt = Date.now();
    let lined = 0;
    for (const job of await this.queue.getDelayed(0, STRANDED_SWEEP_JOBS - 1)) {
      if (!job?.id || job.opts.delay !== HOLD_MS) continue;
      if (await this.hold(job.data, job.id)) lined++;
    }
    return lined;
  }

  private async promoteStalePicks(redis: Redis): Promise<void> {
    this.recoveredAt = Date.now();
    const stale = await redis.zrangebyscore(this.dispatchingKey(), 0, Date.now() - STALE_PICK_MS);
    for (const jobId of stale) await this.promote(redis, jobId).catch(() => undefined);
  }

  private async snapshot(installation = '', repository = '') {
    const args = [this.root, String(SNAPSHOT_JOBS_PER_REPO), installation, repository];
    const raw = (await runScript(this.redis, SNAPSHOT, [this.routeKey()], args)) as string;
    const snap = JSON.parse(raw) as Snapshot;
    const weights = new Map<string, number>();
    const w = list<string>(snap.weights);
    for (let i = 0; i + 1 < w.length; i += 2) weights.set(w[i]!, Number(w[i + 1]));
    const idle = new Map<string, { ipass: number; rpass: number; rvt: number; vt: number }>();
    const classes: ClassLine[] = snap.classes.map((cls) => {
      idle.set(cls.name, {
        ipass: Number(cls.idle?.ipass ?? 0),
        rpass: Number(cls.idle?.rpass ?? 0),
        rvt: Number(cls.idle?.rvt ?? 0),
        vt: Number(cls.vt ?? 0),
      });
      return {
        name: cls.name,
        insts: list<{ name: string; pass: string; repos: unknown }>(cls.insts).map((i) => ({
          name: i.name,
          pass: Number(i.pass),
          repos: list<{ name: string; pass: string; jobs: unknown }>(i.repos).map((r) => ({
            name: r.name,
            pass: Number(r.pass),
            jobs: list<string>(r.jobs),
          })),
        })),
      };
    });
    return { classes, weights, idle };
  }
}
