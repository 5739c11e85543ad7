/**
 * Running the Python tools the CLI relies on (the ONNX exporter, SWE-bench's harness): the environment they get,
 * and a child whose output goes to the user as it comes, stopped at a wall-time cap.
 */
import { spawn } from 'node:child_process';

/** The environment for Python: the user's, without the model's key or a GitHub token. */
export function pythonEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && !/^(FROGNANO_OPENAI_API_KEY|GITHUB_TOKEN|GH_TOKEN|PRIVATE_KEY|WEBHOOK_SECRET)$/.test(k))
      out[k] = v;
  }
  return out;
}

export interface StreamedRun {
  /** null when it was killed (the wall-time cap, a signal). */
  code: number | null;
  timedOut: boolean;
  /** The last few KB of its output, for an error message. */
  tail: string;
}

const TAIL_BYTES = 4096;

/**
 * Runs argv with its stdout and stderr passed through to `to` as they come (progress lines, pip's output), killed at
 * the cap. It stays in the CLI's process group, so a Ctrl-C in the terminal stops it with the CLI rather than
 * leaving a 30 GB export running behind it. Never rejects for a non-zero exit; rejects when it cannot start (ENOENT).
 */
export function runStreaming(
  argv: string[],
  opts: { env: Record<string, string>; cwd?: string; timeoutMs: number; to: NodeJS.WritableStream },
): Promise<StreamedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd,
      env: opts.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let tail = '';
    let timedOut = false;
    const keep = (c: Buffer) => {
      opts.to.write(c);
      tail = (tail + c.toString('utf8')).slice(-TAIL_BYTES);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, timedOut, tail });
    });
  });
}
