import type { Readable, Writable } from 'node:stream';
import type { BlockedRequest, EgressGrant } from './egress/index.js';

/**
 * The Sandbox is the only way the Leaf tools touch a repository: every implementation
 * (docker, bwrap, local) exposes the same operations so the agent loop never knows where it runs.
 * There are no host-side file operations: the Leaf tools read, write and list files by running their helper
 * inside the sandbox (spawn), so every path the model chooses resolves in the sandbox's own view.
 */
export type SandboxKind = 'docker' | 'bwrap' | 'local';

export interface ExecOptions {
  /** Kill the command after this long; the result then has timedOut=true. */
  timeoutMs?: number;
  /** Extra environment variables. Never pass secrets: they would be visible to the model's commands. */
  env?: Record<string, string>;
  /** Aborts the command (treated like a timeout, but reported as cancelled). */
  signal?: AbortSignal;
  /** Cap on captured bytes per stream; the rest is dropped and counted in `*Truncated`. */
  maxOutputBytes?: number;
  /** Data written to the command's stdin. */
  stdin?: string;
  /**
   * Binary stdin (a set-up snapshot going into a fresh sandbox): piped to the command as it comes, instead of
   * `stdin`. The host never interprets the bytes.
   */
  stdinStream?: Readable;
  /**
   * Binary stdout (a set-up snapshot made inside the sandbox): every byte goes to this sink instead of `stdout`, up
   * to maxOutputBytes; the rest is dropped and counted in stdoutTruncated (a caller treats that as a failure).
   */
  stdoutSink?: Writable;
  /**
   * Give this command network access (setup commands of a repository that opted in with `setup.network`; never
   * the model's commands): proxy-only egress (egress/session.ts). docker and bwrap: no interface but loopback, and
   * the HTTP(S) proxy variables naming a forwarder to a host-side EgressProxy that admits only what the grant's
   * policy allows and never a private, loopback, link-local or runner address. `true`: the registries. local:
   * always, unfiltered (no isolation at all).
   */
  network?: boolean | EgressGrant;
  /**
   * One of the bot's own commands (setup, tests, computing the patch), whose result the model must not be able to
   * change: no login or rc files, BASH_ENV/ENV unset, a fixed PATH of system directories, a fresh empty HOME and
   * TMPDIR, only the sandbox's base environment and `env` (see shellCommand.ts). The model's own commands keep
   * upstream Leaf's login shell.
   */
  clean?: boolean;
}

export interface ExecResult {
  /** Exit code, or null when the process was killed (timeout, cancel, signal). */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  cancelled: boolean;
  /** Bytes dropped from each stream because of maxOutputBytes. */
  stdoutTruncated: number;
  stderrTruncated: number;
  durationMs: number;
  /** A command with network: the requests the egress proxy refused (absent without network). */
  blocked?: BlockedRequest[];
}

export interface Sandbox {
  readonly kind: SandboxKind;
  /** Absolute path of the repository root as seen by commands inside the sandbox. */
  readonly workdir: string;
  /**
   * Runs `bash -lc command` in the repository root (with `clean`: a clean shell, see ExecOptions.clean). Never
   * throws for a non-zero exit.
   */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Runs argv[0] with argv[1..] directly (no shell, no login files) inside the sandbox boundary, with the same
   * options, limits and clean-up as exec. The Leaf tools run their in-sandbox helper through this.
   */
  spawn(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  /** Releases everything (containers, temp dirs). Safe to call twice. */
  close(): Promise<void>;
}

/**
 * The job went past one of its sandbox limits that ends it (the workspace disk budget): the sandbox refuses further
 * use. The message says what a maintainer can act on (which limit, its size), without host paths.
 */
export class SandboxLimitError extends Error {
  /** What the issue is told (src/runner/publicFailure.ts ownPublicReason): the limit and what to do, nothing else. */
  readonly publicReason: string;

  constructor(
    readonly limit: 'workspace_disk' | 'workspace_files',
    message: string,
    /** The part of `message` fit for the issue, when the message carries more (an error's own text). */
    publicDetail = message,
  ) {
    super(`sandbox stopped: ${message}`);
    this.name = 'SandboxLimitError';
    this.publicReason =
      `The run was stopped: ${publicDetail}. Keep large generated files and installed dependencies out of the ` +
      "repository's working tree, or ask the runner's operator for a larger workspace budget, then comment `/frognano retry`.";
  }
}
