import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runProcess } from './process.js';
import type { ExecOptions, ExecResult, Sandbox } from './types.js';
import { shellCommand } from './shellCommand.js';

/** The environment every sandboxed command starts from: nothing of the host's, so no token can leak in. */
export function baseEnv(home: string): Record<string, string> {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'dumb',
    CI: 'true',
    GIT_TERMINAL_PROMPT: '0',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
  };
}

/**
 * No isolation at all: commands run as plain subprocesses of the runner in the repository directory.
 * Only for hosts without Docker and bubblewrap, and only when explicitly configured (SANDBOX=local).
 */
export class LocalSandbox implements Sandbox {
  readonly kind = 'local' as const;
  readonly workdir: string;
  /**
   * A private HOME per sandbox: commands must not run the runner's dotfiles (which may hang, or hold credentials
   * such as ~/.npmrc tokens) nor leave state in them.
   */
  private home: Promise<string> | undefined;
  /** Where clean commands make their fresh HOME and TMPDIR (see shellCommand.ts). */
  private cleanRoot: Promise<string> | undefined;
  private closed = false;

  constructor(
    repoDir: string,
    private readonly defaultTimeoutMs = 120_000,
  ) {
    this.workdir = path.resolve(repoDir);
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closed) throw new Error('sandbox is closed');
    // The clean shell makes its own HOME, below a directory of this sandbox's (the host's /tmp would keep the ones
    // a killed command could not remove); the base environment's HOME is not passed on.
    const tmpParent = options.clean
      ? await (this.cleanRoot ??= mkdtemp(path.join(os.tmpdir(), 'frognano-clean-')))
      : undefined;
    const shell = shellCommand(command, options, baseEnv('/nonexistent'), tmpParent);
    return this.spawn(shell.argv, shell.options);
  }

  async spawn(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closed) throw new Error('sandbox is closed');
    this.home ??= mkdtemp(path.join(os.tmpdir(), 'frognano-home-'));
    return runProcess(argv, {
      cwd: this.workdir,
      env: { ...baseEnv(await this.home), ...options.env },
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      signal: options.signal,
      maxOutputBytes: options.maxOutputBytes,
      stdin: options.stdin,
      stdinStream: options.stdinStream,
      stdoutSink: options.stdoutSink,
    });
  }

  /** Removes the private HOME; the repository directory belongs to the caller. */
  async close(): Promise<void> {
    this.closed = true;
    const dirs = [this.home, this.cleanRoot];
    this.home = undefined;
    this.cleanRoot = undefined;
    for (const dir of dirs) if (dir) await rm(await dir, { recursive: true, force: true });
  }
}
