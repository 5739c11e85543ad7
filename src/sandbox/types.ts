import type { Readable } from 'node:stream';

/**
 * The Sandbox is the only way the Leaf tools touch a repository: every implementation
 * (docker, bwrap, local) exposes the same operations so the agent loop never knows where it runs.
 * Paths given to file operations are relative to the repository root; implementations must refuse
 * paths that escape it (`..`, absolute paths, symlinks pointing outside).
 */
export type SandboxKind = 'docker' | 'bwrap' | 'local';

export interface ExecOptions {
  /** Kill the command after this long; the result then has timedOut=true. */
  timeoutMs?: number;
  /** Working directory relative to the repository root (default: the root). */
  cwd?: string;
  /** Extra environment variables. Never pass secrets: they would be visible to the model's commands. */
  env?: Record<string, string>;
  /** Aborts the command (treated like a timeout, but reported as cancelled). */
  signal?: AbortSignal;
  /** Cap on captured bytes per stream; the rest is dropped and counted in `*Truncated`. */
  maxOutputBytes?: number;
  /** Data written to the command's stdin. */
  stdin?: string;
  /**
   * Give this command network access (setup commands of a repository that opted in with `setup.network`; never
   * the model's commands). docker: a short-lived container on the engine's bridge with the same workspace and
   * limits; bwrap: the host's network namespace (which includes the host's loopback services); local: always.
   */
  network?: boolean;
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
}

export interface FileEntry {
  /** Repo-relative POSIX path. */
  path: string;
  size: number;
}

export interface ReadFileOptions {
  /**
   * Refuse (FileTooLargeError) instead of loading a file larger than this: one multi-GB file in a repository
   * must not exhaust the runner's memory.
   */
  maxBytes?: number;
}

export interface Sandbox {
  readonly kind: SandboxKind;
  /** Absolute path of the repository root as seen by commands inside the sandbox. */
  readonly workdir: string;
  /** Runs `bash -lc command` in the repository (or `cwd` below it). Never throws for a non-zero exit. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /**
   * Runs argv[0] with argv[1..] directly (no shell, no login files) inside the sandbox boundary, with the same
   * options, limits and clean-up as exec. The Leaf tools run their in-sandbox helper through this.
   */
  spawn(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  /**
   * Reads a repo-relative regular file. Throws SandboxPathError / ENOENT-style errors with readable messages,
   * and FileTooLargeError when it is larger than `options.maxBytes`.
   */
  readFile(path: string, options?: ReadFileOptions): Promise<Buffer>;
  /**
   * Streams a repo-relative regular file (same path rules as readFile), for files too large to read whole.
   * Optional so other implementations stay valid; local, bwrap and docker have it.
   */
  openFileStream?(path: string): Promise<Readable>;
  /** Writes a repo-relative file, creating parent directories. */
  writeFile(path: string, data: string | Buffer): Promise<void>;
  /** Lists regular files under a repo-relative directory (recursive, `.git` skipped), sorted, at most `limit`. */
  listFiles(dir?: string, limit?: number): Promise<{ files: FileEntry[]; truncated: boolean }>;
  /** Releases everything (containers, temp dirs). Safe to call twice. */
  close(): Promise<void>;
}

export class SandboxPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxPathError';
  }
}

/** A file is larger than the reader allowed (ReadFileOptions.maxBytes). */
export class FileTooLargeError extends Error {
  constructor(readonly path: string, readonly size: number, readonly maxBytes: number) {
    super(`${path} is ${size} bytes, more than the ${maxBytes} bytes allowed`);
    this.name = 'FileTooLargeError';
  }
}

/**
 * The job went past one of its sandbox limits that ends it (the workspace disk budget): the sandbox refuses further
 * use. The message says what a maintainer can act on (which limit, its size), without host paths.
 */
export class SandboxLimitError extends Error {
  constructor(readonly limit: 'workspace_disk' | 'workspace_files', message: string) {
    super(`sandbox stopped: ${message}`);
    this.name = 'SandboxLimitError';
  }
}
