import { WaitingError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RunnerRegistration } from '../src/ops/runnerRegistry.js';
import { onCancel } from '../src/queue/cancel.js';
import { createQueue, type FrognanoQueue } from '../src/queue/queue.js';
import { QUEUE_NAME, type JobData, type JobResult } from '../src/queue/schema.js';
import { isStalledFailure } from '../src/queue/stalled.js';
import { processJob } from '../src/runner/processJob.js';
import { HandBackError, JobFailure, type AbortCause, type RunnerContext } from '../src/runner/types.js';
import type { EnqueueRound } from '../src/queue/followUps.js';
import { startNextRound } from '../src/runner/nextRound.js';
import { startRepairRound } from '../src/runner/verifyRepair.js';
import { recheckCiAfterRound } from '../src/runner/ciRecheck.js';
import { createCiJudgeQueue, type CiJudgeQueue } from '../src/queue/ciJudge.js';
import { reportStalledJob } from '../src/runner/stalledJob.js';
import { createHandOff } from './handOff.js';
import { releaseJobHold, startJobUsage } from './jobUsage.js';
import { isRedisConnectionError } from '../src/util/redisState.js';

export interface RunnerWorkerOptions {
  /** BullMQ connection (a dedicated ioredis with maxRetriesPerRequest: null). */
  connection: ConnectionOptions;
  /** Dedicated pub/sub connection for cancel requests (ioredis goes into subscriber mode). */
  subscriber: Redis;
  ctx: RunnerContext;
  prefix?: string;
  /** Jobs at once; one per GPU is the sane default (FROGNANO_CONCURRENCY). */
  concurrency?: number;
  /**
   * A job's lock lives this long without renewal (renewed every half). If the runner dies, the job is
   * back in the queue after roughly lockDuration + stalledInterval.
   */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** How often a job may stall (runner crash) before it fails instead of being handed to another runner. */
  maxStalledCount?: number;
  registration?: RunnerRegistration;
}

export interface RunnerWorker {
  worker: Worker<JobData, JobResult, string>;
  /** Jobs being processed now, by id. */
  activeJobs(): string[];
  /**
   * Stops taking jobs, waits up to `graceMs` for active ones, then aborts them; aborted jobs go back to
   * the queue (another runner picks them up) and their status comment says queued again.
   */
  shutdown(graceMs: number): Promise<void>;
}

/** A job of `frognano eval --queue` (it never touches GitHub). */
function isEvalJob(data: unknown): boolean {
  return typeof data === 'object' && data !== null && 'eval' in data && (data as { eval?: unknown }).eval !== undefined;
}

export function createRunnerWorker(o: RunnerWorkerOptions): RunnerWorker {
  const active = new Map<string, AbortController>();
  /** Status-comment writes for jobs BullMQ gave up on; shutdown waits for them. */
  const reports = new Set<Promise<void>>();
  const log = o.ctx.logger;
  // A round's end queues the pull request's next round from the asks that waited for it (src/runner/nextRound.ts).
  const queue = createQueue(o.connection, o.prefix ? { prefix: o.prefix } : {});
  const handOff = createHandOff({ queue, redis: o.ctx.redis, logger: log });
  // A CI failure that came while a round ran is handed back to the app's judgment when the round ends.
  const ciJudge = createCiJudgeQueue(o.connection, o.prefix);

  const processor = jobProcessor(o, { queue, handOff, active, ciJudge });

  const worker = new Worker<JobData, JobResult, string>(QUEUE_NAME, processor, {
    connection: o.connection,
    ...(o.prefix ? { prefix: o.prefix } : {}),
    concurrency: o.concurrency ?? 1,
    lockDuration: o.lockDurationMs ?? 120_000,
    stalledInterval: o.stalledIntervalMs ?? 60_000,
    maxStalledCount: o.maxStalledCount ?? 2,
  });
  worker.on('failed', onFailed(o, { queue, ciJudge }, reports, handOff.enqueue));
  worker.on('completed', (job, result) => log.info({ jobId: job.id, outcome: result.outcome }, 'job completed'));
  // Redis down: the connections' watchers (runner/service.ts) say so once; BullMQ would repeat it every retry.
  worker.on('error', (err) => {
    if (!isRedisConnectionError(err)) log.error({ err }, 'worker error');
  });
  worker.on('stalled', (jobId) =>
    log.warn({ jobId }, 'job stalled (its runner stopped renewing the lock); it goes back to the queue'),
  );

  return {
    worker,
    activeJobs: () => [...active.keys()],
    shutdown: (graceMs: number) =>
      shutdownWorker(worker, { active, reports, queue, log }, graceMs).finally(() => ciJudge.close()),
  };
}

interface ProcessorDeps {
  queue: FrognanoQueue;
  handOff: ReturnType<typeof createHandOff>;
  /** Jobs being processed now, by id, with what stops them. */
  active: Map<string, AbortController>;
  ciJudge: CiJudgeQueue;
}

/** Runs one job: listens for its cancel, records its metrics, hands it back on shutdown, starts the PR's next round. */
function jobProcessor(o: RunnerWorkerOptions, { queue, handOff, active, ciJudge }: ProcessorDeps) {
  const log = o.ctx.logger;
  return async (job: Job<JobData, JobResult, string>, token?: string): Promise<JobResult> => {
    const id = job.id ?? 'unknown';
    const controller = new AbortController();
    active.set(id, controller);
    const stopListening = onCancel(
      o.subscriber,
      id,
      (req) => controller.abort({ kind: 'cancel', by: req.by } satisfies AbortCause),
      {
        checker: o.ctx.redis,
      },
    );
    await o.registration?.setCurrentJob(id).catch(() => undefined);
    const started = Date.now();
    let handedBack = false;
    let result: JobResult | undefined;
    const usage = startJobUsage(o.ctx, job.data, id);
    try {
      result = await processJob(job, usage.ctx, controller.signal);
      o.ctx.metrics?.recordJobFinished({
        status: 'completed',
        outcome: result.outcome,
        durationSeconds: (Date.now() - started) / 1000,
        turns: result.turns,
      });
      return result;
    } catch (e) {
      if (e instanceof HandBackError) {
        handedBack = true;
        log.warn({ jobId: id }, 'handing the job back to the queue (shutdown)');
        await job.moveToWait(token);
        throw new WaitingError();
      }
      const category = e instanceof JobFailure ? e.category : 'unexpected';
      o.ctx.metrics?.recordJobFinished({
        status: 'failed',
        reason: category,
        durationSeconds: (Date.now() - started) / 1000,
      });
      throw e;
    } finally {
      // An eval instance has no issue or pull request: no next round, CI or repair follows it.
      const onGitHub = !isEvalJob(job.data);
      // A handed-back round has not ended: it runs again, and its end starts the next round.
      if (!handedBack && onGitHub)
        await startNextRound(queue, o.ctx, job.data, log.child({ jobId: id }), handOff.enqueue);
      if (!handedBack && onGitHub) await recheckCiAfterRound(ciJudge, o.ctx.redis, job.data, log.child({ jobId: id }));
      // After the asks: a round of theirs pushes a new head that is verified again, so no repair is queued then.
      if (!handedBack && onGitHub)
        await startRepairRound(queue, o.ctx, job.data, result, log.child({ jobId: id }), handOff.enqueue);
      await usage.end({ handedBack });
      await handOff.jobEnding(id);
      active.delete(id);
      await stopListening();
      await o.registration?.setCurrentJob(null).catch(() => undefined);
    }
  };
}

/**
 * Stops taking jobs, waits up to `graceMs` for active ones, then aborts them (they go back to the queue); waits for
 * the reports on jobs BullMQ gave up on.
 */
async function shutdownWorker(
  worker: Worker<JobData, JobResult, string>,
  {
    active,
    reports,
    queue,
    log,
  }: {
    active: Map<string, AbortController>;
    reports: Set<Promise<void>>;
    queue: FrognanoQueue;
    log: RunnerContext['logger'];
  },
  graceMs: number,
): Promise<void> {
  const closing = worker.close();
  const timer = setTimeout(() => {
    for (const [id, c] of active) {
      log.warn({ jobId: id }, 'grace period over; stopping the job');
      c.abort({ kind: 'shutdown' } satisfies AbortCause);
    }
  }, graceMs);
  try {
    await closing;
  } finally {
    clearTimeout(timer);
  }
  await Promise.all([...reports]);
  await queue.close();
}

/** Logs a failed job; one BullMQ gave up on after it stalled too often is also reported on its issue. */
function onFailed(
  o: RunnerWorkerOptions,
  { queue, ciJudge }: { queue: FrognanoQueue; ciJudge: CiJudgeQueue },
  reports: Set<Promise<void>>,
  enqueue: EnqueueRound,
): (job: Job<JobData, JobResult, string> | undefined, err: Error) => void {
  const log = o.ctx.logger;
  return (job, err) => {
    if (err instanceof WaitingError || err?.name === 'WaitingError') return;
    log.error({ jobId: job?.id, reason: err.message }, 'job failed');
    // BullMQ fails a job that stalled too often itself, without calling processJob: its runner died mid-job
    // (repeatedly), so this runner, which picked it up, tells the issue.
    if (job && isStalledFailure(err.message)) {
      // Its run time is unknown (the runner that ran it is gone); NaN keeps it out of the duration histogram.
      o.ctx.metrics?.recordJobFinished({ status: 'failed', reason: 'stalled', durationSeconds: Number.NaN });
      // Its hold on the tenant's runner-seconds goes with it (the time the dead runner used is unknown).
      void releaseJobHold(o.ctx, job).catch((e: unknown) =>
        log.warn({ jobId: job.id, err: e }, "could not release the job's quota hold; the next admission drops it"),
      );
      // An eval instance has no issue to tell: `frognano eval --queue` sees the failed job and records it.
      if (isEvalJob(job.data)) return;
      const report = reportStalledJob(job, o.ctx)
        .then((state) =>
          log.info(
            { jobId: job.id, stalled: job.stalledCounter, status: state?.kind ?? 'none (unreadable job data)' },
            'reported a job given up after stalling',
          ),
        )
        .catch((e: unknown) => log.error({ jobId: job.id, err: e }, 'could not report a stalled job on its issue'))
        // The round ended (given up): the asks that waited for it start the next round.
        .then(() => startNextRound(queue, o.ctx, job.data, log.child({ jobId: job.id }), enqueue))
        .then(() => recheckCiAfterRound(ciJudge, o.ctx.redis, job.data, log.child({ jobId: job.id })))
        .finally(() => reports.delete(report));
      reports.add(report);
    }
  };
}
