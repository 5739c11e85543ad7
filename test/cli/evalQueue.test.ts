import { jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { createRunnerWorker, type RunnerWorker } from '../../runner/worker.js';
import { ReplayBackend } from '../../src/inference/replay.js';
import type { ChatMessage, GenerateOptions, ModelBackend, ToolSpec } from '../../src/inference/types.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { tenantOf } from '../../src/queue/fairShare/tenants.js';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';
import { publishQuotas } from '../../src/queue/quotas/published.js';
import { runnerSecondsUsed } from '../../src/queue/quotas/store.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { SandboxConfigSchema } from '../../src/sandbox/index.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { captureLogs, PRIVATE_KEY } from '../runner/fixtures.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { FIX_SCRIPT, FIXTURE_ACTIVATION, prepareFixtures, predictions, readJson } from './evalFixtures.js';
import { cleanEnv, runFrognano, tempDir, type CliRun } from './helpers.js';

// `frognano eval --queue` as a subprocess against real Redis and a real runner worker (runner/worker.ts) in this
// process: the fixture SWE-bench instances (evalFixtures.ts) run as eval rounds in real docker sandboxes of their
// images, with the scripted model; the CLI collects the predictions into --out as the local path writes them.
jest.setTimeout(300_000);

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `fn-test-evalq-${randomUUID().slice(0, 8)}`;

/** The scripted model, from its first turn for each instance (a runner keeps one backend for every job). */
class ScriptPerInstance implements ModelBackend {
  private current = ReplayBackend.fromTurns(FIX_SCRIPT.turns);
  info() {
    return this.current.info();
  }
  countTokens(messages: ChatMessage[], tools: ToolSpec[]) {
    return this.current.countTokens(messages, tools);
  }
  generate(messages: ChatMessage[], tools: ToolSpec[], options?: GenerateOptions) {
    if (!messages.some((m) => m.role === 'assistant')) this.current = ReplayBackend.fromTurns(FIX_SCRIPT.turns);
    return this.current.generate(messages, tools, options);
  }
}

let work: string;
let fx: Awaited<ReturnType<typeof prepareFixtures>> | undefined;
let redis: Redis;
let queue: FrognanoQueue;
let runner: RunnerWorker | undefined;
const conns: Redis[] = [];
const logs = captureLogs();

beforeAll(async () => {
  work = await tempDir('evalq');
  redis = createRedisConnection(REDIS_URL);
  queue = createQueue(redis, { prefix: PREFIX });
  if (!(await dockerForTests())) return;
  fx = await prepareFixtures(work);
  const ctx: RunnerContext = {
    redis,
    app: { appId: 1, privateKey: PRIVATE_KEY },
    gitBaseUrl: 'file:///nonexistent',
    backend: new ScriptPerInstance(),
    sandbox: SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, defaultTimeoutMs: 60_000 }),
    workDir: path.join(work, 'runner-work'),
    trajectoryDir: path.join(work, 'runner-trajectories'),
    runnerDescription: 'eval test runner',
    logger: logs.logger,
    progressIntervals: { jobEveryMs: 0, commentEveryMs: 0 },
  };
  const [connection, subscriber] = [createRedisConnection(REDIS_URL), createRedisConnection(REDIS_URL)];
  conns.push(connection, subscriber);
  runner = createRunnerWorker({ connection, subscriber, prefix: PREFIX, ctx, lockDurationMs: 30_000 });
});

afterAll(async () => {
  await runner?.shutdown(1000);
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await Promise.all([...conns, redis].map((c) => c.quit()));
  await fs.rm(work, { recursive: true, force: true });
});

const env = () => cleanEnv({ REDIS_URL, FROGNANO_QUEUE_PREFIX: PREFIX });

function queued(out: string, extra: string[], opts: Parameters<typeof runFrognano>[1] = {}): Promise<CliRun> {
  const args = ['eval', '--queue', '--dataset', fx!.dataset, '--out', out, '--image-template', fx!.template];
  return runFrognano([...args, '--activate', FIXTURE_ACTIVATION, ...extra], {
    timeoutMs: 240_000,
    env: env(),
    ...opts,
  });
}

describe('frognano eval --queue (a real runner worker, docker)', () => {
  const out = () => path.join(work, 'out');

  test('the instances run as eval rounds on the runner; --out gets what the local path writes', async () => {
    if (!fx) return;
    const run = await queued(out(), ['--instances', 'fixture__calc-1,fixture__strings-2', '--tenant', 'fixtures']);
    expect(run.stderr).toContain("queueing 2 instance(s) on the runners' queue as eval:fixtures");
    expect(run.code).toBe(0);
    const preds = await predictions(out());
    expect(preds.map((p) => p.instance_id).sort()).toEqual(['fixture__calc-1', 'fixture__strings-2']);
    for (const p of preds) {
      expect(Object.keys(p)).toEqual(['instance_id', 'model_name_or_path', 'model_patch']);
      expect(p.model_name_or_path).toBe('replay:scripted');
      expect(p.model_patch).toMatch(/^diff --git a\/lib\.py b\/lib\.py/);
      const dir = path.join(out(), 'instances', p.instance_id);
      expect(await fs.readFile(path.join(dir, 'changes.patch'), 'utf8')).toBe(p.model_patch);
      const t = await readJson(path.join(dir, 'trajectory.json'));
      expect(t.exit_reason).toBe('agent');
      expect(await fs.readFile(path.join(dir, 'trajectory.md'), 'utf8')).toContain('Fixed the function.');
      expect(await readJson(path.join(dir, 'result.json'))).toMatchObject({
        status: 'finished',
        exit_reason: 'agent',
        turns: 3,
      });
    }
    expect(preds.find((p) => p.instance_id === 'fixture__calc-1')!.model_patch).toContain('+    return a + b');
    const summary = await readJson(path.join(out(), 'eval-summary.json'));
    expect(summary.totals).toMatchObject({ instances: 2, finished: 2, errors: 0, patches: 2, turns: 6 });
    expect(summary.queue).toMatchObject({ tenant: 'eval:fixtures' });
    // The runner charged the eval tenant's runner-seconds, as for any installation; its jobs are collected and gone.
    const used = await runnerSecondsUsed(
      redis,
      tenantOf({ owner: 'x', repo: 'y', eval: { tenant: 'eval:fixtures' } as never }),
      'day',
    );
    expect(used.installation).toBeGreaterThan(0);
    expect(await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed')).toEqual({
      waiting: 0,
      active: 0,
      completed: 0,
      failed: 0,
      delayed: 0,
    });
  });

  test('a second run skips what has a prediction; Ctrl-C leaves queued jobs running, and a rerun collects them once', async () => {
    if (!fx) return;
    const again = await queued(out(), ['--instances', 'fixture__calc-1,fixture__strings-2']);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('2 of 2 instances already done');
    expect(again.stderr).toContain('queueing 0 instance(s)');
    // The runner stops taking jobs: the third instance's job waits, and the CLI is interrupted while it waits.
    await runner!.worker.pause(true);
    let sent = false;
    const stopped = await queued(out(), [], {
      onStderr: (text, child) => {
        if (!sent && text.includes('queueing 1 instance(s)')) {
          sent = true;
          setTimeout(() => child.kill('SIGINT'), 2000);
        }
      },
    });
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain('1 job(s) stay queued or running on the runners; run the same command again');
    const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(jobs.map((j) => j.id)).toEqual([expect.stringMatching(/^eval-[0-9a-f]{16}-fixture__calc-3$/)]);
    runner!.worker.resume();
    const collected = await queued(out(), []);
    expect(collected.code).toBe(0);
    expect(collected.stderr).toContain('0 job(s) added, 1 already on the queue from an earlier run of this --out');
    expect((await predictions(out())).map((p) => p.instance_id).sort()).toEqual([
      'fixture__calc-1',
      'fixture__calc-3',
      'fixture__strings-2',
    ]);
    // The job the first run queued is the one that ran (not a second one): the runner logged it once.
    const ran = logs.lines.filter((l) => l.includes(jobs[0]!.id!) && l.includes('eval result stored'));
    expect(ran).toHaveLength(1);
  });

  test('an instance whose image is not on the runner is refused, recorded per instance, and tried again later', async () => {
    if (!fx) return;
    const o = path.join(work, 'out-missing');
    const run = await runFrognano(
      [
        'eval',
        '--queue',
        '--dataset',
        fx.dataset,
        '--out',
        o,
        '--image-template',
        'frognano-eval-missing.{id}:none',
        '--instances',
        'fixture__calc-1',
      ],
      { env: env(), timeoutMs: 120_000 },
    );
    expect(run.code).toBe(4);
    const summary = await readJson(path.join(o, 'eval-summary.json'));
    expect(summary.totals).toMatchObject({ instances: 1, finished: 0, errors: 1 });
    expect(summary.instances[0].error).toMatch(
      /image frognano-eval-missing\.fixture_1776_calc-1:none is not on this runner.*FROGNANO_EVAL_PULL_IMAGES=off/,
    );
    expect(await predictions(o)).toEqual([]);
    // Its job is gone once collected: a run with the image there runs the instance again.
    const retried = await queued(o, ['--instances', 'fixture__calc-1']);
    expect(retried.code).toBe(0);
    expect((await predictions(o)).map((p) => p.instance_id)).toEqual(['fixture__calc-1']);
  });

  test('a quota on the eval tenant holds back what it does not admit', async () => {
    if (!fx) return;
    const tenant = `eval:quota-${randomUUID().slice(0, 6)}`;
    await publishQuotas(redis, parseQuotasFile(`installations:\n  ${tenant}: { runsPerHour: 1 }\n`, 'quotas.yaml'));
    try {
      const o = path.join(work, 'out-quota');
      const run = await queued(o, ['--instances', 'fixture__calc-1,fixture__strings-2', '--tenant', tenant]);
      expect(run.code).toBe(4);
      expect(run.stderr).toContain(`1 instance(s) not queued: ${tenant} is over its runsPerHour quota (1 of 1)`);
      expect((await predictions(o)).map((p) => p.instance_id)).toEqual(['fixture__calc-1']);
    } finally {
      await publishQuotas(redis, null);
    }
  });
});
