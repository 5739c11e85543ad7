import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { listRunners } from '../../src/ops/runnerRegistry.js';
import { PRIVATE_KEY } from './fixtures.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Starts `tsx runner/main.ts` as a real process and collects its (JSON) log lines. */
function startRunner(env: Record<string, string>, cwd = process.cwd()) {
  const root = process.cwd();
  const child = spawn(
    process.execPath,
    [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, 'runner/main.ts')],
    {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const waitForLog = async (text: string, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!out.includes(text)) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`runner never logged "${text}"; output:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { child, exited, waitForLog, output: () => out };
}

describe('runner/main.ts', () => {
  let dir: string;
  let redis: Redis;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-main-'));
    redis = new Redis(REDIS_URL);
  });
  afterAll(async () => {
    await redis.quit();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('starts, registers itself, and stops cleanly on SIGTERM', async () => {
    const replay = path.join(dir, 'replay.json');
    await fs.writeFile(replay, JSON.stringify({ turns: [{ content: 'done' }] }));
    const prefix = `fn-e-main-${randomUUID().slice(0, 8)}`;
    const r = startRunner({
      APP_ID: '1',
      PRIVATE_KEY: PRIVATE_KEY,
      REDIS_URL,
      FROGNANO_QUEUE_PREFIX: prefix,
      FROGNANO_BACKEND: 'replay',
      FROGNANO_REPLAY_FILE: replay,
      FROGNANO_SANDBOX: 'bwrap',
      FROGNANO_WORK_DIR: path.join(dir, 'work'),
      FROGNANO_TRAJECTORY_DIR: path.join(dir, 'trajectories'),
      FROGNANO_SHUTDOWN_GRACE_SECONDS: '1',
    });
    try {
      await r.waitForLog('runner started');
      // tsx runs the script in a child node process: take the pid from the runner's own log line.
      const line = r
        .output()
        .split('\n')
        .find((l) => l.includes('runner started'))!;
      const pid = JSON.parse(line).pid as number;
      const mine = (await listRunners(redis)).find((x) => x.pid === pid);
      expect(mine).toMatchObject({ backend: 'replay', model: 'replay:replay.json' });
      expect(r.output()).not.toContain('PRIVATE KEY');

      r.child.kill('SIGTERM');
      expect(await r.exited).toBe(0);
      expect(r.output()).toContain('runner stopped');
      expect((await listRunners(redis)).find((x) => x.pid === pid)).toBeUndefined();
    } finally {
      if (r.child.exitCode === null) r.child.kill('SIGKILL');
    }
  });

  it('refuses to start without GitHub App credentials, naming the variable', async () => {
    const r = startRunner({ REDIS_URL, FROGNANO_BACKEND: 'replay', FROGNANO_REPLAY_FILE: '/nonexistent.json' });
    expect(await r.exited).toBe(1);
    expect(r.output()).toContain('runner configuration: APP_ID is required; PRIVATE_KEY is required');
  });

  it('reads .env from its directory, the environment winning; a bad value: exit code 2 and one line', async () => {
    const cwd = await fs.mkdtemp(path.join(dir, 'envdir-'));
    await fs.writeFile(path.join(cwd, '.env'), 'FROGNANO_CONCURRENCY=lots\nFROGNANO_SANDBOX=bwrap\n');
    const bad = startRunner({ REDIS_URL }, cwd);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toBe(
      'frognano runner: FROGNANO_CONCURRENCY=lots is not accepted: expected a whole number from 1 to 64\n',
    );
    // A Redis mode without its companion is a setting to fix as well: one line, exit 2, no stack.
    const redis = startRunner({ REDIS_URL, FROGNANO_CONCURRENCY: '1', REDIS_SENTINEL_NAME: 'mymaster' }, cwd);
    expect(await redis.exited).toBe(2);
    expect(redis.output()).toBe(
      'frognano runner: invalid Redis settings: REDIS_SENTINEL_NAME is set without REDIS_SENTINELS\n',
    );
    // The same .env under an environment that sets the variable: past the check, to the missing credentials.
    const good = startRunner({ REDIS_URL, FROGNANO_CONCURRENCY: '1' }, cwd);
    expect(await good.exited).toBe(1);
    expect(good.output()).toContain('APP_ID is required');
  });
});
