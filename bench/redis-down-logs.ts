/**
 * Log lines the app (`src/app/main.ts`) and the runner (`runner/main.ts`) write in 12 s with Redis down (a port
 * nothing listens on; the shared Redis is never touched), counted from each process's first line so a slow start on a
 * shared machine does not shorten the window. `npx tsx bench/redis-down-logs.ts [baselineRoot]`: with a second
 * checkout (e.g. `git archive <old commit> | tar -x -C /tmp/old` plus a node_modules link) it prints its figures
 * beside this one's. Counts: all lines, lines that are not JSON, `[ioredis] Unhandled error event` lines.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const WINDOW_MS = 12_000;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function count(root: string, entry: string, env: Record<string, string>): Promise<string> {
  const child = spawn(path.join(root, 'node_modules/.bin/tsx'), [path.join(root, entry)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const firstLine = new Promise<void>((resolve) => {
    const on = (d: Buffer) => {
      out += d.toString();
      resolve();
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
  });
  await Promise.race([firstLine, new Promise((r) => setTimeout(r, 60_000))]);
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  process.kill(-child.pid!, 'SIGKILL');
  const lines = out.split('\n').filter(Boolean);
  const nonJson = lines.filter((l) => !l.startsWith('{')).length;
  const unhandled = lines.filter((l) => l.includes('[ioredis] Unhandled error event')).length;
  return `${String(lines.length).padStart(5)} lines, ${String(nonJson).padStart(4)} not JSON, ${String(unhandled).padStart(4)} [ioredis] unhandled`;
}

async function measure(root: string, dir: string): Promise<void> {
  const redisUrl = `redis://127.0.0.1:${await freePort()}`;
  const key = path.join(dir, 'app.pem');
  const app = await count(root, 'src/app/main.ts', {
    APP_ID: '1',
    PRIVATE_KEY_PATH: key,
    WEBHOOK_SECRET: 's',
    REDIS_URL: redisUrl,
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
  });
  const runner = await count(root, 'runner/main.ts', {
    APP_ID: '1',
    PRIVATE_KEY_PATH: key,
    REDIS_URL: redisUrl,
    FROGNANO_BACKEND: 'replay',
    FROGNANO_REPLAY_FILE: path.join(dir, 'replay.json'),
    FROGNANO_SANDBOX: 'bwrap',
    FROGNANO_WORK_DIR: path.join(dir, 'work'),
    FROGNANO_TRAJECTORY_DIR: path.join(dir, 'trajectories'),
  });
  console.log(`${root}\n  app    ${app}\n  runner ${runner}`);
}

const dir = mkdtempSync(path.join(tmpdir(), 'fn-bench-redis-down-'));
try {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(path.join(dir, 'app.pem'), privateKey.export({ type: 'pkcs1', format: 'pem' }));
  writeFileSync(path.join(dir, 'replay.json'), JSON.stringify({ turns: [{ content: 'done' }] }));
  console.log(`log lines in ${WINDOW_MS / 1000} s after each process's first line, Redis down (connection refused)`);
  if (process.argv[2]) await measure(path.resolve(process.argv[2]), dir);
  await measure(process.cwd(), dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
