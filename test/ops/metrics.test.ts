import { Queue, Worker } from 'bullmq';
import { FrognanoMetrics, normalizeLabel } from '../../src/ops/metrics.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const connection = { url: REDIS_URL, maxRetriesPerRequest: null };

/** The value of one sample line in Prometheus text format, e.g. `frognano_jobs_queued 3`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('ops metrics', () => {
  it('exposes every frognano metric, with HELP and TYPE, in Prometheus text format', async () => {
    const m = new FrognanoMetrics();
    m.bindQueue({ getJobCounts: async () => ({}) });
    const { contentType, body } = await m.render();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const [name, type] of [
      ['frognano_jobs_queued', 'gauge'],
      ['frognano_jobs_active', 'gauge'],
      ['frognano_jobs_completed_total', 'counter'],
      ['frognano_jobs_failed_total', 'counter'],
      ['frognano_job_duration_seconds', 'histogram'],
      ['frognano_model_tokens_per_second', 'histogram'],
      ['frognano_model_tokens_total', 'counter'],
      ['frognano_turns_per_job', 'histogram'],
    ]) {
      expect(body).toContain(`# HELP ${name} `);
      expect(body).toContain(`# TYPE ${name} ${type}`);
    }
    // Node default metrics are on by default.
    expect(body).toContain('# TYPE process_cpu_user_seconds_total counter');
  });

  it('leaves the queue gauges out until a queue is bound (runners have none: no misleading zeros)', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    expect((await m.render()).body).not.toContain('frognano_jobs_queued');
    await m.refreshQueueGauges({ getJobCounts: async () => ({ waiting: 4, delayed: 1, active: 2, completed: 9 }) });
    const { body } = await m.render();
    expect(sample(body, 'frognano_jobs_queued')).toBe(5);
    expect(sample(body, 'frognano_jobs_active')).toBe(2);
  });

  it('records finished jobs by outcome and failure reason, with duration and turns', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.recordJobFinished({ status: 'completed', outcome: 'pull_request', durationSeconds: 95, turns: 14 });
    m.recordJobFinished({ status: 'completed', outcome: 'pull_request', durationSeconds: 400, turns: 40 });
    m.recordJobFinished({ status: 'completed', outcome: 'no_patch', durationSeconds: 20, turns: 3 });
    m.recordJobFinished({ status: 'failed', reason: 'Clone failed', durationSeconds: 2 });
    const { body } = await m.render();
    expect(sample(body, 'frognano_jobs_completed_total{outcome="pull_request"}')).toBe(2);
    expect(sample(body, 'frognano_jobs_completed_total{outcome="no_patch"}')).toBe(1);
    expect(sample(body, 'frognano_jobs_failed_total{reason="clone_failed"}')).toBe(1);
    expect(sample(body, 'frognano_job_duration_seconds_count{status="completed"}')).toBe(3);
    expect(sample(body, 'frognano_job_duration_seconds_sum{status="completed"}')).toBe(515);
    expect(sample(body, 'frognano_job_duration_seconds_bucket{le="120",status="completed"}')).toBe(2);
    expect(sample(body, 'frognano_job_duration_seconds_count{status="failed"}')).toBe(1);
    expect(sample(body, 'frognano_turns_per_job_count')).toBe(3);
    expect(sample(body, 'frognano_turns_per_job_bucket{le="20"}')).toBe(2);
  });

  it('folds failure reasons beyond a fixed number into "other" so label cardinality stays bounded', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    for (let i = 0; i < 40; i++)
      m.recordJobFinished({ status: 'failed', reason: `error number ${i}`, durationSeconds: 1 });
    const { body } = await m.render();
    const reasons = body.split('\n').filter((l) => l.startsWith('frognano_jobs_failed_total{'));
    expect(reasons).toHaveLength(26); // 25 distinct + other
    expect(sample(body, 'frognano_jobs_failed_total{reason="other"}')).toBe(15);
    expect(normalizeLabel('  Model error: HTTP 503!! ')).toBe('model_error_http_503');
  });

  it('records model turns as tokens per second and token totals by backend', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.recordModelTurn({
      backend: 'onnx',
      completionTokens: 400,
      elapsedMs: 10_000,
      prefillTokens: 3000,
      promptTokens: 9000,
    });
    m.recordModelTurn({ backend: 'onnx', completionTokens: 0, elapsedMs: 50 }); // an empty turn says nothing about speed
    const { body } = await m.render();
    expect(sample(body, 'frognano_model_tokens_per_second_count{backend="onnx"}')).toBe(1);
    expect(sample(body, 'frognano_model_tokens_per_second_sum{backend="onnx"}')).toBe(40);
    expect(sample(body, 'frognano_model_tokens_total{backend="onnx",kind="completion"}')).toBe(400);
    expect(sample(body, 'frognano_model_tokens_total{backend="onnx",kind="prompt"}')).toBe(3000);
  });

  describe('queue gauges from a real BullMQ queue', () => {
    const prefix = `fn-ops-metrics-${process.pid}-${Date.now()}`;
    let queue: Queue;
    let worker: Worker | undefined;
    beforeAll(() => {
      queue = new Queue('frognano', { connection, prefix });
    });
    afterAll(async () => {
      await worker?.close(true);
      await queue.obliterate({ force: true });
      await queue.close();
    });

    it('counts waiting + delayed as queued and picked-up jobs as active, at scrape time', async () => {
      const m = new FrognanoMetrics({ defaultMetrics: false });
      m.bindQueue(queue);
      await queue.add('solve', { n: 1 });
      await queue.add('solve', { n: 2 });
      await queue.add('solve', { n: 3 }, { delay: 60_000 });
      let body = (await m.render()).body;
      expect(sample(body, 'frognano_jobs_queued')).toBe(3);
      expect(sample(body, 'frognano_jobs_active')).toBe(0);

      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let started!: () => void;
      const pickedUp = new Promise<void>((r) => (started = r));
      worker = new Worker(
        'frognano',
        async () => {
          started();
          await gate;
        },
        { connection, prefix, concurrency: 1 },
      );
      await pickedUp;
      body = (await m.render()).body;
      expect(sample(body, 'frognano_jobs_queued')).toBe(2);
      expect(sample(body, 'frognano_jobs_active')).toBe(1);
      release();

      // The explicit helper gives the same figures.
      await worker.close();
      const counts = await m.refreshQueueGauges(queue);
      expect(counts.active).toBe(0);
    });

    it('keeps the last values (and still renders) when the queue cannot be read', async () => {
      const m = new FrognanoMetrics({ defaultMetrics: false });
      m.jobsQueued.set(7);
      m.bindQueue({ getJobCounts: () => Promise.reject(new Error('connect ECONNREFUSED')) });
      const { body } = await m.render();
      expect(sample(body, 'frognano_jobs_queued')).toBe(7);
    });
  });
});
