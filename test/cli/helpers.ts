import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli/main.js';
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(ROOT, 'bin', 'frognano.js');

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The environment the CLI subprocess gets: nothing model/sandbox related leaks in from the developer's shell. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(FROGNANO_|APP_ID$|PRIVATE_KEY|WEBHOOK_SECRET$|GITHUB_TOKEN$)/.test(k)) continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/**
 * Runs the real `node bin/frognano.js ...` as a subprocess. `onStderr` sees stderr as it arrives and may
 * return the child to signal it (used for Ctrl-C).
 */
export function runFrognano(
  args: string[],
  opts: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
    onStderr?: (text: string, child: ReturnType<typeof spawn>) => void;
  } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: opts.env ?? cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`frognano ${args.join(' ')} did not finish in time.\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      opts.onStderr?.(stderr, child);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export async function tempDir(prefix: string): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), `frognano-cli-test-${prefix}-`));
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

/** A real git repository with one commit holding `files`. */
export async function makeRepo(dir: string, files: Record<string, string>): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await fs.writeFile(path.join(dir, name), content);
  }
  const git = (...a: string[]) =>
    execFileSync('git', a, { cwd: dir, env: { ...process.env, ...GIT_ENV }, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  return dir;
}

/** path -> sha256 of content (or link target) + mode, for every entry under dir, .git included. */
export async function snapshotTree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(rel: string): Promise<void> {
    const abs = path.join(dir, rel);
    const st = await fs.lstat(abs);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out.set(rel, `link ${await fs.readlink(abs)} ${mode}`);
    else if (st.isDirectory()) {
      out.set(`${rel}/`, `dir ${mode} ${st.mtimeMs}`);
      for (const name of (await fs.readdir(abs)).sort()) await walk(path.join(rel, name));
    } else {
      const hash = createHash('sha256')
        .update(await fs.readFile(abs))
        .digest('hex');
      out.set(rel, `file ${hash} ${mode} ${st.mtimeMs}`);
    }
  }
  await walk('.');
  return out;
}

export async function writeJson(file: string, value: unknown): Promise<string> {
  await fs.writeFile(file, JSON.stringify(value, null, 2));
  return file;
}

/** `frognano solve <repo> --issue <issue> --replay <script> --sandbox bwrap --out <out>`, then `more` flags. */
export function solveOnBwrap(
  repo: string,
  issue: string,
  script: string,
  out: string,
  ...more: string[]
): Promise<CliRun> {
  return runFrognano([
    'solve',
    repo,
    '--issue',
    issue,
    '--replay',
    script,
    '--sandbox',
    'bwrap',
    '--out',
    out,
    ...more,
  ]);
}

/** The CLI in this process (runCli) with the test's own environment and directory: its exit code and both streams. */
export async function runCliInProcess(
  args: string[],
  o: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => (err += c));
  const code = await runCli(args, { stdout, stderr, env: o.env, cwd: o.cwd });
  return { code, out, err };
}
