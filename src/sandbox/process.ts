import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { ExecResult } from './types.js';

export interface RunProcessOptions {
  cwd?: string;
  /** The complete environment of the child: nothing is inherited, so host secrets cannot leak in. */
  env: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  maxOutputBytes?: number;
  stdin?: string;
  /** Binary stdin, piped as is (instead of `stdin`). */
  stdinStream?: Readable;
  /** Binary stdout: written here, capped at maxOutputBytes (instead of captured). */
  stdoutSink?: Writable;
  /** Pipes opened after stdin, stdout and stderr (fds 3, 4, ...), handed to onSpawn (bwrap's --info-fd/--block-fd). */
  extraPipes?: number;
  onSpawn?: (child: ChildProcess) => void;
}

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** Collects at most `cap` bytes of a stream and counts the rest (shared with the docker sandbox's exec streams). */
export class CappedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;
  constructor(readonly cap: number) {}
  push(chunk: Buffer): void {
    const room = this.cap - this.size;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.size += part.length;
    this.dropped += chunk.length - part.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * Writes `from` into `to` as it comes (with backpressure), at most `count`'s cap bytes; the rest is only counted
 * (in `count.dropped`). `count` keeps no bytes of its own.
 */
export function pipeCapped(from: Readable, to: Writable, count: CappedBuffer): void {
  let room = count.cap;
  from.on('data', (c: Buffer) => {
    const part = c.length > room ? c.subarray(0, Math.max(0, room)) : c;
    room -= part.length;
    count.dropped += c.length - part.length;
    if (part.length > 0 && !to.write(part)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
}

/** The result of a command whose signal was aborted before it started (shared with the docker sandbox's exec). */
export function cancelledBeforeStart(): ExecResult {
  return {
    exitCode: null,
    stdout: '',
    stderr: '',
    timedOut: false,
    cancelled: true,
    stdoutTruncated: 0,
    stderrTruncated: 0,
    durationMs: 0,
  };
}

/**
 * Runs argv[0] with argv[1..] in its own process group, so a timeout or cancel kills the whole tree
 * (a `bash -lc` that started background children included). Never rejects for a non-zero exit.
 */
export function runProcess(argv: string[], opts: RunProcessOptions): Promise<ExecResult> {
  const started = Date.now();
  const cap = opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) {
      resolve(cancelledBeforeStart());
      return;
    }
    const child = spawn(argv[0], argv.slice(1), {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', ...Array<'pipe'>(opts.extraPipes ?? 0).fill('pipe')],
    });
    opts.onSpawn?.(child);
    const out = new CappedBuffer(cap);
    const err = new CappedBuffer(cap);
    let timedOut = false;
    let cancelled = false;
    let settled = false;

    const killTree = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          killTree();
        }, opts.timeoutMs)
      : undefined;
    const onAbort = () => {
      cancelled = true;
      killTree();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });

    if (opts.stdoutSink) pipeCapped(child.stdout, opts.stdoutSink, out);
    else child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => {
      /* the command may exit without reading stdin */
    });
    if (opts.stdinStream) {
      opts.stdinStream.on('error', killTree);
      opts.stdinStream.pipe(child.stdin);
    } else child.stdin.end(opts.stdin ?? '');

    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    // 'close' (not 'exit') so both pipes are drained; a killed group closes them too.
    child.on('close', (code) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      // Background children that kept the pipes open are gone with the group; make sure.
      killTree();
      resolve({
        exitCode: timedOut || cancelled ? null : code,
        stdout: out.text(),
        stderr: err.text(),
        timedOut,
        cancelled,
        stdoutTruncated: out.dropped,
        stderrTruncated: err.dropped,
        durationMs: Date.now() - started,
      });
    });
  });
}

/** stderr with a line from the sandbox itself at the end (why a command was stopped). */
export function appendNote(stderr: string, note: string): string {
  return `${stderr}${stderr && !stderr.endsWith('\n') ? '\n' : ''}${note}\n`;
}
