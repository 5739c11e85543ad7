/**
 * The eval job of `frognano eval --queue` at the queue's boundary: its payload schema (a malformed one is refused by
 * the schema and by the runner before anything runs), its deterministic id, its tenant in the fair share and the
 * quotas, and its stored result (real Redis, capped).
 */
import { describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { UnrecoverableError } from 'bullmq';
import {
  evalResultKey,
  MAX_EVAL_RESULT_BYTES,
  readEvalResult,
  storeEvalResult,
  type EvalResult,
} from '../../src/queue/evalResults.js';
import { serviceClassOf, tenantOf } from '../../src/queue/fairShare/tenants.js';
import { admitRun } from '../../src/queue/quotas/check.js';
import { FairShare } from '../../src/queue/fairShare/dispatcher.js';
import { createQueue } from '../../src/queue/queue.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { evalJobData, jobIdFor, JobDataSchema, type EvalJob } from '../../src/queue/schema.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { REDIS_URL, useQueueRedis } from '../support/queueRedis.js';
import { issueJob } from '../support/tenantJobs.js';

const q = useQueueRedis('evaljob');
const ns = `${q.ns}:`;

const job: EvalJob = {
  tenant: 'eval:nightly',
  runId: '0123456789abcdef',
  instance: {
    instance_id: 'astropy__astropy-12907',
    repo: 'astropy/astropy',
    base_commit: 'd'.repeat(40),
    problem_statement: 'Modeling separability_matrix is wrong\nfor nested CompoundModels.',
  },
  image: 'swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest',
  activation: 'source /opt/miniconda3/bin/activate && conda activate testbed',
};
const data = evalJobData(job, '2026-12-06T05:00:00.000Z');

describe('the eval job payload', () => {
  test('an eval job parses, has no installation, and its id is (run, instance): the same on every enqueue', () => {
    expect(JobDataSchema.parse(data)).toEqual(data);
    expect(data.installationId).toBe(0);
    expect(jobIdFor(data)).toBe('eval-0123456789abcdef-astropy__astropy-12907');
    expect(jobIdFor(evalJobData(job, new Date().toISOString()))).toBe(jobIdFor(data));
    expect(jobIdFor(data)).not.toContain(':');
  });

  test.each([
    ['a tenant that is not eval:<name>', { ...data, eval: { ...job, tenant: 'acme' } }, /eval\.tenant/],
    ['an image name with a shell in it', { ...data, eval: { ...job, image: 'x; rm -rf /' } }, /eval\.image/],
    [
      'an instance id that climbs out',
      { ...data, eval: { ...job, instance: { ...job.instance, instance_id: '../x' } } },
      /instance_id/,
    ],
    [
      'a short base commit',
      { ...data, eval: { ...job, instance: { ...job.instance, base_commit: 'abc' } } },
      /base_commit/,
    ],
    ['an unknown field', { ...data, eval: { ...job, pushTo: 'main' } }, /pushTo|unrecognized/i],
    ['an eval job with an installation', { ...data, installationId: 7 }, /installationId/],
    ['an issue job without one', { ...issueJob('acme', 'widgets', 1), installationId: 0 }, /installationId/],
  ])('refuses %s, and the runner fails it at once, unretried', async (_what, payload, path) => {
    const parsed = JobDataSchema.safeParse(payload);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n')).toMatch(path);
    // The payload is refused before anything of the runner's context is used.
    const run = processJob(
      { id: 'x', data: payload, updateProgress: async () => undefined },
      {} as RunnerContext,
      new AbortController().signal,
    );
    await expect(run).rejects.toBeInstanceOf(UnrecoverableError);
    await expect(run).rejects.toThrow(/invalid job data/);
  });

  test('the tenant is the eval run: fair share and quotas charge eval:<name>, as any installation', async () => {
    expect(tenantOf(data)).toEqual({ installation: 'eval:nightly', repository: 'eval:nightly/astropy__astropy' });
    expect(serviceClassOf(data)).toBe('c1');
    const cfg = parseQuotasFile('installations:\n  eval:nightly: { runsPerHour: 1 }\n', 'quotas.yaml');
    const start = (id: string) => ({ jobId: id, jobKeyPrefix: `${ns}bull:frognano:` });
    expect(await admitRun(q.redis, cfg, tenantOf(data), start('a'))).toBeNull();
    const refused = await admitRun(q.redis, cfg, tenantOf(data), start('b'));
    expect(refused).toMatchObject({ quota: 'runsPerHour', scope: 'installation', tenant: 'eval:nightly', limit: 1 });
    // Another tenant is not charged for it.
    const other = tenantOf({ ...data, eval: { ...job, tenant: 'eval:other' } });
    expect(await admitRun(q.redis, cfg, other, start('c'))).toBeNull();
  });
});

describe('eval jobs in the fair share', () => {
  test("an eval run's jobs wait in their own tenant's line and share the slots with issues fairly", async () => {
    let slots = 0;
    const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const plain = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const queue = createQueue(conn, { prefix: `${ns}bull` });
    try {
      const fair = new FairShare(queue, plain, { slots: () => slots });
      const evalJob = (n: number) =>
        evalJobData({ ...job, instance: { ...job.instance, instance_id: `astropy__astropy-${n}` } }, data.enqueuedAt);
      for (const d of [
        evalJob(1),
        evalJob(2),
        evalJob(3),
        issueJob('acme', 'widgets', 1),
        issueJob('acme', 'widgets', 2),
      ])
        expect((await fair.enqueue(d)).created).toBe(true);
      await new Promise((r) => setTimeout(r, 50)); // enqueue's own kick (slots 0: nothing moves) settles
      expect(await queue.getJobCountByTypes('delayed')).toBe(5);
      slots = 100;
      const moved = await fair.dispatch();
      // Round robin between the two tenants (ties go by name), whatever order they were queued in.
      expect(moved.map((m) => m.installation)).toEqual([
        'acme',
        'eval:nightly',
        'acme',
        'eval:nightly',
        'eval:nightly',
      ]);
      expect(moved[1]).toMatchObject({ repository: 'eval:nightly/astropy__astropy' });
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await Promise.all([conn.quit(), plain.quit()]);
    }
  });
});

describe('the stored eval result', () => {
  const record = {
    instance_id: job.instance.instance_id,
    repo: job.instance.repo,
    image: job.image,
    status: 'finished' as const,
    exit_reason: 'agent',
    error: null,
    turns: 3,
    context_tokens: 900,
    completion_tokens: 120,
    wall_sec: 4.2,
    patch_bytes: 10,
    finished_at: '2026-12-06T05:01:00.000Z',
  };
  const prediction = {
    instance_id: record.instance_id,
    model_name_or_path: 'frognano-4b',
    model_patch: 'diff --git\n',
  };

  test('round-trips with a TTL; an oversized trajectory is left out, an oversized patch is an error', async () => {
    const keyed = `${randomUUID()}`;
    const result: EvalResult = { record, prediction, trajectory: '{"n_steps":3}', runner: 'test runner' };
    await storeEvalResult(q.redis, keyed, result);
    expect(await readEvalResult(q.redis, keyed)).toEqual(result);
    expect(await q.redis.ttl(evalResultKey(keyed))).toBeGreaterThan(24 * 3600);
    const big = 'x'.repeat(MAX_EVAL_RESULT_BYTES);
    const slim = await storeEvalResult(q.redis, keyed, { ...result, trajectory: big });
    expect(slim.trajectory).toBeUndefined();
    expect(slim.prediction).toEqual(prediction);
    const huge = await storeEvalResult(q.redis, keyed, { ...result, prediction: { ...prediction, model_patch: big } });
    expect(huge.prediction).toBeUndefined();
    expect(huge.record).toMatchObject({ status: 'error', error: expect.stringMatching(/patch is larger/) });
    expect(await readEvalResult(q.redis, keyed)).toEqual(huge);
    await q.redis.set(evalResultKey('junk'), '{"record":1}');
    expect(await readEvalResult(q.redis, 'junk')).toBeUndefined();
  });
});
