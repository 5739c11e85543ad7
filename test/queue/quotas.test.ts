import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { admitRun, checkQuotas } from '../../src/queue/quotas/check.js';
import { HOLD_GRACE_MS, HOLD_MAX_SECONDS, heldSeconds, settleHold } from '../../src/queue/quotas/holds.js';
import { limitsFor, weightsOf } from '../../src/queue/quotas/schema.js';
import { periodEnd, recordRunnerSeconds, runnerSecondsUsed, takeRun } from '../../src/queue/quotas/store.js';
import { parseQuotasFile, watchQuotasFile } from '../../src/app/quotaFile.js';
import { FrognanoMetrics } from '../../src/ops/metrics.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ns = `fn-test-quotas-${randomUUID().slice(0, 8)}:`;
let redis: Redis;
const acme = { installation: 'acme', repository: 'acme/widgets' };
const T0 = new Date('2026-12-03T10:00:00Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
/** A run to admit: its job id, and the (test's own) BullMQ key prefix where its job would be. */
const JOBS = `${ns}bull:frognano:`;
const start = (jobId: string) => ({ jobId, jobKeyPrefix: JOBS });

beforeAll(() => {
  redis = new Redis(REDIS_URL, { keyPrefix: ns });
});
afterAll(async () => {
  const raw = new Redis(REDIS_URL);
  const keys = await raw.keys(`${ns}*`);
  if (keys.length) await raw.del(...keys);
  await Promise.all([raw.quit(), redis.quit()]);
});
beforeEach(async () => {
  const raw = new Redis(REDIS_URL);
  const keys = await raw.keys(`${ns}*`);
  if (keys.length) await raw.del(...keys);
  await raw.quit();
});

const FILE = `
defaults:
  runsPerHour: 20
  runnerSecondsPerDay: 36000
  runnerSecondsPerMonth: 720000
installations:
  Acme: { runsPerHour: 50, weight: 3 }
repositories:
  acme/Widgets: { runsPerHour: 2 }
`;

describe('quotas file', () => {
  test('parses, lower-cases names, and resolves the stricter of repository and installation', () => {
    const cfg = parseQuotasFile(FILE, 'quotas.yaml');
    expect(limitsFor(cfg, acme)).toEqual({
      installation: { runsPerHour: 50, runnerSecondsPerDay: 36000, runnerSecondsPerMonth: 720000 },
      repository: { runsPerHour: 2, runnerSecondsPerDay: 36000, runnerSecondsPerMonth: 720000 },
    });
    expect(limitsFor(cfg, { installation: 'other', repository: 'other/x' }).repository.runsPerHour).toBe(20);
    expect(weightsOf(cfg)).toEqual(new Map([['acme', 3]]));
    expect(parseQuotasFile('', 'empty.yaml')).toEqual({ defaults: {}, installations: {}, repositories: {} });
  });

  test('an unknown key is an error that names the file and the key', () => {
    expect(() => parseQuotasFile('defaults:\n  runsPerHuor: 3\n', 'q.yaml')).toThrow(/q\.yaml[\s\S]*runsPerHuor/);
    expect(() => parseQuotasFile('limits: {}\n', 'q.yaml')).toThrow(/limits/);
    expect(() => parseQuotasFile('repositories:\n  widgets: { runsPerHour: 1 }\n', 'q.yaml')).toThrow(
      /repositories\.widgets/,
    );
  });

  test('a change to the file is picked up; a broken edit keeps the previous version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fn-quotas-'));
    const path = join(dir, 'quotas.yaml');
    writeFileSync(path, 'defaults: { runsPerHour: 1 }\n');
    // As a ConfigMap update or an editor does it: a new file renamed over the old one.
    const replace = (text: string) => {
      writeFileSync(`${path}.new`, text);
      renameSync(`${path}.new`, path);
    };
    const errors: string[] = [];
    let changed = 0;
    const watch = watchQuotasFile(path, {
      intervalMs: 20,
      onChange: () => changed++,
      onError: (e) => errors.push(e.message),
    });
    try {
      expect(watch.current().defaults.runsPerHour).toBe(1);
      replace('defaults: { runsPerHour: 7, x: 1 }\n');
      await waitFor(() => errors.length > 0);
      expect(watch.current().defaults.runsPerHour).toBe(1);
      replace('defaults: { runsPerHour: 7 }\n');
      await waitFor(() => changed > 0);
      expect(watch.current().defaults.runsPerHour).toBe(7);
    } finally {
      watch.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function waitFor(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('token bucket', () => {
  test('runs per hour refill evenly; a refusal says used, whose and when one run is back', async () => {
    expect(await takeRun(redis, acme, { repository: 2 }, T0)).toEqual({ taken: true });
    expect(await takeRun(redis, acme, { repository: 2 }, T0)).toEqual({ taken: true });
    const refused = await takeRun(redis, acme, { repository: 2 }, T0);
    expect(refused).toEqual({ taken: false, scope: 'repository', used: 2, resetAt: later(30 * 60_000) });
    expect((await takeRun(redis, acme, { repository: 2 }, later(30 * 60_000))).taken).toBe(true);
  });

  test('takes from both buckets or neither', async () => {
    const other = { installation: 'acme', repository: 'acme/other' };
    expect((await takeRun(redis, acme, { installation: 2, repository: 1 }, T0)).taken).toBe(true);
    // The repository's bucket is empty: the installation's is not charged.
    expect((await takeRun(redis, acme, { installation: 2, repository: 1 }, T0)).taken).toBe(false);
    expect((await takeRun(redis, other, { installation: 2, repository: 1 }, T0)).taken).toBe(true);
    const r = await takeRun(redis, other, { installation: 2, repository: 5 }, T0);
    expect(r).toMatchObject({ taken: false, scope: 'installation', used: 2 });
  });

  test('concurrent takes never hand out more runs than the bucket holds', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => takeRun(redis, acme, { repository: 5 }, T0)));
    expect(results.filter((r) => r.taken)).toHaveLength(5);
  });
});

describe('runner-seconds ledger', () => {
  test('counts per UTC day and month, for the installation and the repository', async () => {
    await recordRunnerSeconds(redis, acme, 100, T0);
    await recordRunnerSeconds(redis, { installation: 'acme', repository: 'acme/other' }, 50, T0);
    await recordRunnerSeconds(redis, acme, 10, new Date('2026-12-04T01:00:00Z'));
    expect(await runnerSecondsUsed(redis, acme, 'day', T0)).toEqual({ installation: 150, repository: 100 });
    expect(await runnerSecondsUsed(redis, acme, 'month', T0)).toEqual({ installation: 160, repository: 110 });
    expect(periodEnd('day', T0)).toEqual(new Date('2026-12-04T00:00:00Z'));
    expect(periodEnd('month', T0)).toEqual(new Date('2027-01-01T00:00:00Z'));
  });

  test('admitRun refuses on the ledger before taking a run, and names the quota; checkQuotas only looks', async () => {
    const cfg = parseQuotasFile('defaults: { runnerSecondsPerDay: 100, runsPerHour: 1, holdSecondsPerRun: 10 }\n', 'q');
    expect(await checkQuotas(redis, cfg, acme, JOBS, T0)).toBeNull();
    expect(await checkQuotas(redis, cfg, acme, JOBS, T0)).toBeNull(); // looking takes no run
    await recordRunnerSeconds(redis, acme, 100, T0);
    const refused = {
      quota: 'runnerSecondsPerDay',
      scope: 'installation',
      tenant: 'acme',
      used: 100,
      limit: 100,
      resetAt: new Date('2026-12-04T00:00:00Z'),
      inFlight: 0,
    };
    expect(await admitRun(redis, cfg, acme, start('a@1'), T0)).toEqual(refused);
    expect(await checkQuotas(redis, cfg, acme, JOBS, T0)).toEqual(refused);
    // Next day: the ledger is fresh and the hour's run was never taken.
    const nextDay = new Date('2026-12-04T00:00:01Z');
    expect(await admitRun(redis, cfg, acme, start('a@2'), nextDay)).toBeNull();
    expect(await admitRun(redis, cfg, acme, start('a@3'), nextDay)).toMatchObject({ quota: 'runsPerHour' });
    // The run refused by the bucket holds nothing.
    expect((await heldSeconds(redis, acme, nextDay)).jobs).toEqual(['a@2']);
  });
});

describe('runner-seconds held by runs in progress', () => {
  const cfg = parseQuotasFile('defaults: { runnerSecondsPerDay: 36000, holdSecondsPerRun: 600 }\n', 'q');

  test('ten runs start at once at 95% of the day: three holds fit, seven are refused, none passes the limit', async () => {
    await recordRunnerSeconds(redis, acme, 34_200, T0);
    // Ten connections: the admissions really race in Redis.
    const conns = Array.from({ length: 10 }, () => new Redis(REDIS_URL, { keyPrefix: ns }));
    try {
      const results = await Promise.all(conns.map((c, i) => admitRun(c, cfg, acme, start(`job@${i}`), T0)));
      expect(results.filter((r) => r === null)).toHaveLength(3);
      expect(results.filter((r) => r !== null)).toHaveLength(7);
      expect(results.find((r) => r !== null)).toMatchObject({ used: 34_200, inFlight: 1800, limit: 36_000 });
    } finally {
      await Promise.all(conns.map((c) => c.quit()));
    }
    expect(await heldSeconds(redis, acme, T0)).toMatchObject({ installation: 1800, repository: 1800 });
  });

  test('a run that ends settles: its hold goes, the time it used counts, and the room it did not use frees', async () => {
    await recordRunnerSeconds(redis, acme, 34_200, T0);
    for (const id of ['r@1', 'r@2', 'r@3']) expect(await admitRun(redis, cfg, acme, start(id), T0)).toBeNull();
    expect(await admitRun(redis, cfg, acme, start('r@4'), T0)).not.toBeNull();
    await settleHold(redis, acme, 'r@1', 120, T0);
    expect(await runnerSecondsUsed(redis, acme, 'day', T0)).toEqual({ installation: 34_320, repository: 34_320 });
    expect((await heldSeconds(redis, acme, T0)).jobs.sort()).toEqual(['r@2', 'r@3']);
    // 34,320 used + 1,200 held + 600 > 36,000; a second settle frees room for one more.
    expect(await admitRun(redis, cfg, acme, start('r@4'), T0)).not.toBeNull();
    await settleHold(redis, acme, 'r@2', 60, T0);
    expect(await admitRun(redis, cfg, acme, start('r@4'), T0)).toBeNull();
    // Admitting the same job again holds nothing more (a redelivery).
    expect(await admitRun(redis, cfg, acme, start('r@4'), T0)).toBeNull();
    expect((await heldSeconds(redis, acme, T0)).installation).toBe(1200);
  });

  test('a hold whose job ended without a settle, or never appeared, is dropped by the next admission', async () => {
    const raw = new Redis(REDIS_URL);
    const jobKey = (id: string) => `${ns}bull:frognano:${id}`;
    try {
      await recordRunnerSeconds(redis, acme, 34_800, T0);
      // Two runs hold the remaining 1,200 s; their jobs: one failed (finishedOn set by BullMQ), one still waiting.
      await raw.hset(jobKey('dead@1'), 'data', '{}', 'finishedOn', String(T0.getTime()));
      await raw.hset(jobKey('live@1'), 'data', '{}');
      expect(await admitRun(redis, cfg, acme, start('dead@1'), T0)).toBeNull();
      expect(await admitRun(redis, cfg, acme, start('live@1'), T0)).toBeNull();
      // Within the grace a hold counts even without a finished job (its job is added right after the hold).
      expect(await admitRun(redis, cfg, acme, start('next@1'), later(HOLD_GRACE_MS))).not.toBeNull();
      const after = later(HOLD_GRACE_MS + 1);
      // Only looking (an ask that will wait) sweeps too: the finished job's hold no longer blocks it.
      expect(await checkQuotas(redis, cfg, acme, JOBS, later(HOLD_GRACE_MS))).toMatchObject({ inFlight: 1200 });
      expect(await checkQuotas(redis, cfg, acme, JOBS, after)).toBeNull();
      expect((await heldSeconds(redis, acme, after)).jobs).toEqual(['live@1']);
      expect(await admitRun(redis, cfg, acme, start('next@1'), after)).toBeNull();
      expect((await heldSeconds(redis, acme, after)).jobs.sort()).toEqual(['live@1', 'next@1']);
      // next@1's job never appears: dropped once the grace is over; live@1 stays while its job has not finished.
      const later2 = later(2 * HOLD_GRACE_MS + 2);
      expect(await admitRun(redis, cfg, acme, start('other@1'), later2)).toBeNull();
      expect((await heldSeconds(redis, acme, later2)).jobs.sort()).toEqual(['live@1', 'other@1']);
      // The last resort: a hold nobody settles expires.
      const dayAfter = new Date(later2.getTime() + HOLD_MAX_SECONDS * 1000 + 1);
      expect((await heldSeconds(redis, acme, dayAfter)).jobs).toEqual([]);
    } finally {
      await raw.del(jobKey('dead@1'), jobKey('live@1'));
      await raw.quit();
    }
  });
});

describe('metrics per installation', () => {
  test('runs, runner-seconds, generated tokens and refusals are exported', async () => {
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.recordInstallationRun('acme', 12.5);
    m.forInstallation('acme').recordModelTurn({ backend: 'replay', completionTokens: 40, elapsedMs: 100 });
    m.recordQuotaRefusal('acme', 'runsPerHour');
    const body = (await m.render()).body;
    expect(body).toContain('frognano_installation_runs_total{installation="acme"} 1');
    expect(body).toContain('frognano_installation_runner_seconds_total{installation="acme"} 12.5');
    expect(body).toContain('frognano_installation_generated_tokens_total{installation="acme"} 40');
    expect(body).toContain('frognano_quota_refusals_total{installation="acme",quota="runsPerHour"} 1');
    expect(body).toContain('frognano_model_tokens_total{backend="replay",kind="completion"} 40');
  });
});
