/**
 * The app as a user starts it, in a child process: `tsx src/app/main.ts` (what `npm start` runs) or any command (the
 * walkthrough runs `npm start` itself), in a working directory of the test's choosing (where `.env` and app.yml are
 * read and written), on a free port, with an environment cleaned of the App's settings so the machine's own never
 * leak in. Up when it answers HTTP; `stop()` sends SIGTERM and waits for the exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ROOT = process.cwd();

/** Settings a developer's shell may hold that would change what a test's app does. */
const CLEANED = [
  'APP_ID',
  'PRIVATE_KEY',
  'PRIVATE_KEY_PATH',
  'WEBHOOK_SECRET',
  'WEBHOOK_PROXY_URL',
  'NODE_ENV',
  'GHE_HOST',
  'GHE_PROTOCOL',
  'GH_ORG',
  'NO_SMEE_SETUP',
  'FROGNANO_SMEE_URL',
  'GITHUB_CLIENT_ID',
  'GITHUB_CLIENT_SECRET',
];

export interface ChildApp {
  base: string;
  port: number;
  child: ChildProcess;
  /** Everything it wrote, stdout and stderr. */
  output(): string;
  /** Resolves once `pattern` appears in its output; throws with the output after `ms` or when it exits. */
  waitForOutput(pattern: RegExp, ms?: number): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `env` values of undefined remove the variable. */
export async function startChildApp(o: {
  env: Record<string, string | undefined>;
  cwd?: string;
  command?: string[];
  port?: number;
  startMs?: number;
}): Promise<ChildApp> {
  const port = o.port ?? (await freePort());
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of CLEANED) delete env[k];
  Object.assign(env, { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info' }, o.env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const [cmd, ...args] = o.command ?? [join(ROOT, 'node_modules/.bin/tsx'), join(ROOT, 'src/app/main.ts')];
  const child = spawn(cmd!, args, { cwd: o.cwd ?? ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const base = `http://127.0.0.1:${port}`;
  const app: ChildApp = {
    base,
    port,
    child,
    output: () => out,
    waitForOutput: (pattern, ms = 20_000) =>
      waitUntil(
        () => pattern.test(out),
        child,
        ms,
        () => out,
      ),
    stop: () => stopChild(child),
  };
  // Up when it answers HTTP (not when it logs so: a quieter LOG_LEVEL hides "Listening on").
  const up = () =>
    fetch(`${base}/healthz`, { redirect: 'manual' }).then(
      () => true,
      () => false,
    );
  try {
    await waitUntil(up, child, o.startMs ?? 45_000, () => `app did not start:\n${out}`);
  } catch (err) {
    await app.stop();
    throw err;
  }
  return app;
}

async function waitUntil(
  ok: () => boolean | Promise<boolean>,
  child: ChildProcess,
  ms: number,
  what: () => string,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await ok()) return;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(what());
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM to the child's process group (npm start's tsx and node under it), then wait for it to exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    child.kill('SIGTERM');
  }
  await exited;
}
