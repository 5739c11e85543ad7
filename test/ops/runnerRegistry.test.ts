import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import {
  describeRunner,
  publicRunnerName,
  detectGpu,
  listRunners,
  parseNvidiaSmi,
  registerRunner,
} from '../../src/ops/runnerRegistry.js';
import { packageInfo } from '../../src/util/packageInfo.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('runner registry', () => {
  const prefix = `fn-ops-runners-${process.pid}-${Date.now()}`;
  let redis: Redis;
  let tmp: string;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'fn-ops-gpu-'));
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
    await rm(tmp, { recursive: true, force: true });
  });

  it('registers runners with a TTL, lists them, tracks the current job and removes them on stop', async () => {
    const a = await registerRunner({
      redis,
      prefix,
      hostname: 'gpu-node-1',
      model: 'FrogNano-4B',
      backend: 'onnx',
      gpu: { gpu: 'NVIDIA H200', gpuMemoryMiB: 143771 },
      concurrency: 4,
      ttlSeconds: 30,
    });
    const b = await registerRunner({
      redis,
      prefix,
      hostname: 'cpu-box.internal.example',
      name: 'cpu-box',
      id: 'cpu-box-1',
      model: 'FrogNano-4B',
      backend: 'openai',
      gpu: { gpu: 'cpu' },
    });
    try {
      const ttl = await redis.ttl(`${prefix}:runner:${a.info.id}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(30);

      await a.setCurrentJob('octo/hello#7@1');
      let runners = await listRunners(redis, { prefix });
      // The operator's view keeps the real host names.
      expect(runners.map((r) => r.hostname)).toEqual(['cpu-box.internal.example', 'gpu-node-1']);
      const gpuRunner = runners[1];
      expect(gpuRunner).toMatchObject({
        hostname: 'gpu-node-1',
        model: 'FrogNano-4B',
        backend: 'onnx',
        gpu: 'NVIDIA H200',
        gpuMemoryMiB: 143771,
        concurrency: 4,
        version: packageInfo().version,
        pid: process.pid,
        currentJob: 'octo/hello#7@1',
      });
      expect(Date.parse(gpuRunner.startedAt)).not.toBeNaN();
      // Model slots for the fair share's dispatcher: each runner's concurrency (1 when it names none).
      expect(runners[0]!.concurrency).toBe(1);
      // Public texts: the operator's name (FROGNANO_RUNNER_NAME), else a short hash of the hostname; never the hostname.
      expect(gpuRunner.name).toMatch(/^runner-[0-9a-f]{6}$/);
      expect(gpuRunner.name).toBe(publicRunnerName('gpu-node-1'));
      expect(publicRunnerName('gpu-node-2')).not.toBe(gpuRunner.name);
      expect(describeRunner(gpuRunner)).toBe(
        `${gpuRunner.name} (NVIDIA H200, FrogNano-4B via onnx, v${packageInfo().version})`,
      );
      expect(describeRunner(runners[0])).toMatch(/^cpu-box \(CPU, FrogNano-4B via openai, v/);
      for (const r of runners) expect(describeRunner(r)).not.toContain(r.hostname);

      await a.setCurrentJob(null);
      runners = await listRunners(redis, { prefix });
      expect(runners[1].currentJob).toBeUndefined();

      await b.stop();
      runners = await listRunners(redis, { prefix });
      expect(runners.map((r) => r.id)).toEqual([a.info.id]);
    } finally {
      await a.stop();
      await b.stop();
    }
    expect(await listRunners(redis, { prefix })).toEqual([]);
  });

  it('forgets a runner whose heartbeat stopped once its entry expires', async () => {
    const r = await registerRunner({
      redis,
      prefix,
      id: 'ghost',
      hostname: 'ghost',
      model: 'm',
      backend: 'replay',
      gpu: { gpu: 'cpu' },
      ttlSeconds: 1,
      heartbeatMs: 60_000,
    });
    expect((await listRunners(redis, { prefix })).map((x) => x.id)).toContain('ghost');
    // Simulate a crash: the process is gone, nobody calls stop(); only the TTL is left to clean up.
    await redis.pexpire(`${prefix}:runner:ghost`, 50);
    await new Promise((res) => setTimeout(res, 120));
    expect((await listRunners(redis, { prefix })).map((x) => x.id)).not.toContain('ghost');
    expect(await redis.sismember(`${prefix}:runners`, 'ghost')).toBe(0);
    await r.stop();
  });

  it('the heartbeat renews the entry', async () => {
    const r = await registerRunner({
      redis,
      prefix,
      id: 'beating',
      hostname: 'beating',
      model: 'm',
      backend: 'replay',
      gpu: { gpu: 'cpu' },
      ttlSeconds: 2,
      heartbeatMs: 1000,
    });
    try {
      const first = (await listRunners(redis, { prefix })).find((x) => x.id === 'beating')!.lastSeenAt;
      await new Promise((res) => setTimeout(res, 2600)); // longer than the TTL: alive only thanks to the heartbeat
      const again = (await listRunners(redis, { prefix })).find((x) => x.id === 'beating');
      expect(again).toBeDefined();
      expect(Date.parse(again!.lastSeenAt)).toBeGreaterThan(Date.parse(first));
    } finally {
      await r.stop();
    }
  });

  it('reads GPUs from nvidia-smi output and falls back to cpu without it', async () => {
    expect(parseNvidiaSmi('NVIDIA H200, 143771\n')).toEqual({ gpu: 'NVIDIA H200', gpuMemoryMiB: 143771 });
    expect(parseNvidiaSmi('NVIDIA H200, 143771 MiB\nNVIDIA H200, 143771 MiB\n')).toEqual({
      gpu: '2x NVIDIA H200',
      gpuMemoryMiB: 143771,
    });
    expect(parseNvidiaSmi('NVIDIA A10G, 23028\nTesla T4, 15360\n').gpu).toBe('NVIDIA A10G + Tesla T4');
    expect(parseNvidiaSmi('')).toEqual({ gpu: 'cpu' });

    // A stand-in nvidia-smi executable: detectGpu runs it and parses what it prints.
    const fake = path.join(tmp, 'nvidia-smi');
    await writeFile(fake, '#!/bin/sh\n[ "$1" = "--query-gpu=name,memory.total" ] || exit 9\necho "NVIDIA L4, 23034"\n');
    await chmod(fake, 0o755);
    expect(await detectGpu({ command: fake })).toEqual({ gpu: 'NVIDIA L4', gpuMemoryMiB: 23034 });

    const failing = path.join(tmp, 'nvidia-smi-broken');
    await writeFile(
      failing,
      '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver" >&2\nexit 9\n',
    );
    await chmod(failing, 0o755);
    expect(await detectGpu({ command: failing })).toEqual({ gpu: 'cpu' });
    expect(await detectGpu({ command: path.join(tmp, 'does-not-exist') })).toEqual({ gpu: 'cpu' });
  });

  it('knows its own version from package.json', () => {
    expect(packageInfo().version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
