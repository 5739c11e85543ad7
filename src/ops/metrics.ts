/**
 * Prometheus metrics for the app and the runners (served on /metrics by src/ops/http.ts).
 *
 * One `FrognanoMetrics` owns one prom-client Registry; the process uses the shared `metrics` instance
 * and tests make their own so they never see each other's numbers. Label values are kept to small
 * fixed sets: an unbounded label (a free-text error) would create a new time series per job.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What `refreshQueueGauges` needs from a BullMQ Queue (structural, so tests and the app share it). */
export interface QueueCounts {
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
}

/** BullMQ states that mean "waiting for a runner". Delayed jobs are retries in backoff; paused ones wait for resume. */
const QUEUED_STATES = ['waiting', 'prioritized', 'delayed', 'paused', 'waiting-children'] as const;

/** BullMQ states of jobs a runner could start right now: what the autoscaler (KEDA) scales on. */
const BACKLOG_STATES = ['waiting', 'prioritized'] as const;

/** Work held back outside BullMQ's states that a runner will start (e.g. a fair-share dispatcher's own backlog). */
export type BacklogSource = () => Promise<number> | number;

/**
 * The autoscaling backlog, `frognano_queue_backlog`: BullMQ's startable jobs plus every registered source.
 * One sum, so a new kind of held-back work is one more source (`FrognanoMetrics.addBacklogSource`), not a new metric.
 */
export function queueBacklog(counts: Record<string, number>, sources: readonly number[] = []): number {
  return BACKLOG_STATES.reduce((n, s) => n + (counts[s] ?? 0), 0) + sources.reduce((n, v) => n + v, 0);
}

export type JobOutcome = 'pull_request' | 'no_patch' | 'refused' | 'cancelled' | 'prediction';

export type JobFinished =
  | { status: 'completed'; outcome: JobOutcome; durationSeconds: number; turns?: number }
  | { status: 'failed'; reason: string; durationSeconds: number; turns?: number };

export interface ModelTurn {
  /** `onnx`, `openai`, `replay`. */
  backend: string;
  completionTokens: number;
  /** Wall time of the whole turn (prefill + decode). */
  elapsedMs: number;
  promptTokens?: number;
  prefillTokens?: number;
}

/** More distinct failure reasons than this are folded into `other`, so a bug cannot explode the series count. */
const MAX_FAILURE_REASONS = 25;

export class FrognanoMetrics {
  readonly registry: Registry;
  readonly jobsQueued: Gauge;
  readonly jobsActive: Gauge;
  readonly queueBacklog: Gauge;
  readonly jobsCompleted: Counter<'outcome'>;
  readonly jobsFailed: Counter<'reason'>;
  readonly jobDuration: Histogram<'status'>;
  readonly tokensPerSecond: Histogram<'backend'>;
  readonly modelTokens: Counter<'backend' | 'kind'>;
  readonly turnsPerJob: Histogram;
  /** Per installation (account login): what quotas count, and the asks they refused. */
  readonly perInstallation: InstallationCounters;
  private readonly failureReasons = new Set<string>();
  private queue: QueueCounts | null = null;
  private refreshing: Promise<void> | null = null;
  private readonly backlogSources: BacklogSource[] = [];

  constructor(opts: { registry?: Registry; defaultMetrics?: boolean; labels?: Record<string, string> } = {}) {
    this.registry = opts.registry ?? new Registry();
    if (opts.labels) this.registry.setDefaultLabels(opts.labels);
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;

    // The queue gauges join the registry only once a queue is bound or read (the app): a runner has no
    // queue handle, and a constant 0 from every runner would look like an empty queue.
    this.jobsQueued = new Gauge({
      name: 'frognano_jobs_queued',
      help: 'Jobs waiting for a runner (BullMQ waiting + prioritized + delayed + paused), read from Redis.',
      registers: [],
      async collect() {
        await self.refreshFromBoundQueue();
      },
    });
    this.jobsActive = new Gauge({
      name: 'frognano_jobs_active',
      help: 'Jobs a runner is working on now (BullMQ active), read from Redis.',
      registers: [],
      async collect() {
        await self.refreshFromBoundQueue();
      },
    });
    this.queueBacklog = new Gauge({
      name: 'frognano_queue_backlog',
      help:
        "Jobs a runner could start now (BullMQ waiting + prioritized, plus held-back work such as a dispatcher's " +
        'backlog), read from Redis: the autoscaling signal (deploy/k8s/keda).',
      registers: [],
      async collect() {
        await self.refreshFromBoundQueue();
      },
    });
    this.jobsCompleted = new Counter({
      name: 'frognano_jobs_completed_total',
      help: 'Jobs that finished, by outcome (pull_request, no_patch, refused, cancelled, prediction).',
      labelNames: ['outcome'],
      registers,
    });
    this.jobsFailed = new Counter({
      name: 'frognano_jobs_failed_total',
      help: 'Jobs that failed, by reason (e.g. clone_failed, model_error, sandbox_error).',
      labelNames: ['reason'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: 'frognano_job_duration_seconds',
      help: 'Wall time of a job on a runner, from pick-up to the status comment, by status (completed, failed).',
      labelNames: ['status'],
      buckets: [10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
      registers,
    });
    this.tokensPerSecond = new Histogram({
      name: 'frognano_model_tokens_per_second',
      help: 'Generated tokens per second of one model turn (completion tokens / turn wall time), by backend.',
      labelNames: ['backend'],
      buckets: [1, 2, 5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500],
      registers,
    });
    this.modelTokens = new Counter({
      name: 'frognano_model_tokens_total',
      help: 'Tokens processed by the model, by backend and kind (prompt = prefill computed, completion = generated).',
      labelNames: ['backend', 'kind'],
      registers,
    });
    this.turnsPerJob = new Histogram({
      name: 'frognano_turns_per_job',
      help: 'Model turns (assistant messages) one job used.',
      buckets: [1, 2, 5, 10, 20, 30, 50, 75, 100],
      registers,
    });
    this.perInstallation = installationCounters(registers);
  }

  /** Have /metrics read the queue counts from this queue on every scrape (null stops it). */
  bindQueue(queue: QueueCounts | null): void {
    this.queue = queue;
    if (queue) this.exposeQueueGauges();
  }

  private exposeQueueGauges(): void {
    if (this.registry.getSingleMetric('frognano_jobs_queued')) return;
    this.registry.registerMetric(this.jobsQueued);
    this.registry.registerMetric(this.jobsActive);
    this.registry.registerMetric(this.queueBacklog);
  }

  /** Adds held-back work to `frognano_queue_backlog` (read on every scrape, with the queue counts). */
  addBacklogSource(source: BacklogSource): void {
    this.backlogSources.push(source);
  }

  /** prom-client collects metrics concurrently: both queue gauges share one Redis round trip per scrape. */
  private refreshFromBoundQueue(): Promise<void> {
    const queue = this.queue;
    if (!queue) return Promise.resolve();
    this.refreshing ??= this.refreshQueueGauges(queue)
      .then(
        () => undefined,
        // Redis down: keep the last values; /readyz is where an outage shows.
        () => undefined,
      )
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  async refreshQueueGauges(queue: QueueCounts): Promise<{ queued: number; active: number; backlog: number }> {
    this.exposeQueueGauges();
    const [counts, sources] = await Promise.all([
      queue.getJobCounts(...QUEUED_STATES, 'active'),
      Promise.all(this.backlogSources.map((s) => s())),
    ]);
    const queued = QUEUED_STATES.reduce((n, s) => n + (counts[s] ?? 0), 0);
    const active = counts.active ?? 0;
    const backlog = queueBacklog(counts, sources);
    this.jobsQueued.set(queued);
    this.jobsActive.set(active);
    this.queueBacklog.set(backlog);
    return { queued, active, backlog };
  }

  recordJobFinished(f: JobFinished): void {
    if (f.status === 'completed') this.jobsCompleted.inc({ outcome: f.outcome });
    else this.jobsFailed.inc({ reason: this.failureLabel(f.reason) });
    if (Number.isFinite(f.durationSeconds) && f.durationSeconds >= 0) {
      this.jobDuration.observe({ status: f.status }, f.durationSeconds);
    }
    if (f.turns !== undefined && Number.isFinite(f.turns) && f.turns >= 0) this.turnsPerJob.observe(f.turns);
  }

  recordModelTurn(t: ModelTurn): void {
    const backend = normalizeLabel(t.backend) || 'unknown';
    if (t.completionTokens > 0 && t.elapsedMs > 0) {
      this.tokensPerSecond.observe({ backend }, t.completionTokens / (t.elapsedMs / 1000));
    }
    if (t.completionTokens > 0) this.modelTokens.inc({ backend, kind: 'completion' }, t.completionTokens);
    const prompt = t.prefillTokens ?? t.promptTokens;
    if (prompt !== undefined && prompt > 0) this.modelTokens.inc({ backend, kind: 'prompt' }, prompt);
  }

  /** A job ended on a runner after holding it `seconds`. */
  recordInstallationRun(installation: string, seconds: number): void {
    this.perInstallation.runs.inc({ installation });
    if (Number.isFinite(seconds) && seconds > 0) this.perInstallation.runnerSeconds.inc({ installation }, seconds);
  }

  recordQuotaRefusal(installation: string, quota: string): void {
    this.perInstallation.quotaRefusals.inc({ installation, quota });
  }

  /** These metrics, with model turns also counted for `installation` (one job's view, for its pipeline). */
  forInstallation(installation: string): FrognanoMetrics {
    const view = Object.create(this) as FrognanoMetrics;
    view.recordModelTurn = (t: ModelTurn) => {
      this.recordModelTurn(t);
      if (t.completionTokens > 0) this.perInstallation.generatedTokens.inc({ installation }, t.completionTokens);
    };
    return view;
  }

  /** Prometheus text exposition of everything in this registry. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private failureLabel(reason: string): string {
    const label = normalizeLabel(reason) || 'unknown';
    if (this.failureReasons.has(label)) return label;
    if (this.failureReasons.size >= MAX_FAILURE_REASONS) return 'other';
    this.failureReasons.add(label);
    return label;
  }
}

/** `Clone failed!` -> `clone_failed`: lower-case words joined by `_`, at most 40 characters. */
export function normalizeLabel(value: string): string {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 40);
}

export interface InstallationCounters {
  runs: Counter<'installation'>;
  runnerSeconds: Counter<'installation'>;
  generatedTokens: Counter<'installation'>;
  quotaRefusals: Counter<'installation' | 'quota'>;
}

/** The per-installation counters (quotas and fair share, docs/operating-at-scale.md). */
function installationCounters(registers: Registry[]): InstallationCounters {
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter<L>({ name, help, labelNames, registers });
  const byInstallation = ['installation'] as const;
  return {
    runs: counter('frognano_installation_runs_total', 'Jobs that ended on a runner, by installation.', byInstallation),
    runnerSeconds: counter(
      'frognano_installation_runner_seconds_total',
      'Seconds jobs held a runner, by installation (the runner-seconds quotas count).',
      byInstallation,
    ),
    generatedTokens: counter(
      'frognano_installation_generated_tokens_total',
      'Tokens the model generated, by installation.',
      byInstallation,
    ),
    quotaRefusals: counter(
      'frognano_quota_refusals_total',
      'Asks refused because a quota was used up, by installation and quota.',
      ['installation', 'quota'] as const,
    ),
  };
}

/** The process-wide metrics (with Node's default process metrics). */
export const metrics = new FrognanoMetrics();

export function recordJobFinished(f: JobFinished): void {
  metrics.recordJobFinished(f);
}

export function recordModelTurn(t: ModelTurn): void {
  metrics.recordModelTurn(t);
}

export function refreshQueueGauges(queue: QueueCounts): Promise<{ queued: number; active: number; backlog: number }> {
  return metrics.refreshQueueGauges(queue);
}
