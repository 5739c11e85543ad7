import { afterAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { FrognanoMetrics, queueBacklog } from '../../src/ops/metrics.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `fn-test-backlog-${randomUUID().slice(0, 8)}`;
const queue = new Queue('frognano', { connection: { url: REDIS_URL, maxRetriesPerRequest: null }, prefix });

afterAll(async () => {
  await queue.obliterate({ force: true });
  await queue.close();
});

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('frognano_queue_backlog (the KEDA signal)', () => {
  it('counts what a runner could start now: waiting + prioritized, plus every registered source', () => {
    const counts = { waiting: 2, prioritized: 3, delayed: 5, paused: 7, active: 11, 'waiting-children': 13 };
    expect(queueBacklog(counts)).toBe(5);
    expect(queueBacklog(counts, [4, 1])).toBe(10);
    expect(queueBacklog({})).toBe(0);
  });

  it('is read from the bound queue at scrape time, prioritized jobs included (a wait-list length would miss them)', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    expect((await m.render()).body).not.toContain('frognano_queue_backlog');
    m.bindQueue(queue);
    await queue.add('solve', { n: 1 });
    await queue.add('solve', { n: 2 }, { priority: 5 });
    await queue.add('solve', { n: 3 }, { priority: 1 });
    await queue.add('solve', { n: 4 }, { delay: 60_000 });
    let body = (await m.render()).body;
    expect(body).toContain('# TYPE frognano_queue_backlog gauge');
    expect(sample(body, 'frognano_queue_backlog')).toBe(3);
    expect(sample(body, 'frognano_jobs_queued')).toBe(4);

    // A dispatcher holding jobs back adds its own count: one more source, the same metric.
    let held = 6;
    m.addBacklogSource(async () => held);
    body = (await m.render()).body;
    expect(sample(body, 'frognano_queue_backlog')).toBe(9);
    held = 0;
    expect((await m.refreshQueueGauges(queue)).backlog).toBe(3);
  });
});
