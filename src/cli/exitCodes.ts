import { readFile } from 'node:fs/promises';

/**
 * Exit codes of `frognano` (documented in `frognano --help` and docs/cli.md), and the error type that
 * carries one up to main() so every failure ends with one clear line and the right code.
 */
export const EXIT = {
  /** solve: a patch was produced. doctor: every required check passed. replay: printed. verify: success or neutral. */
  OK: 0,
  /** solve: the run finished but changed nothing. */
  NO_PATCH: 1,
  /** doctor: a required check failed. */
  CHECKS_FAILED: 1,
  /** Bad command line (unknown option, missing argument, conflicting flags). */
  USAGE: 2,
  /**
   * Setup problem before the model ran: missing model dir, unreadable repo, no sandbox, unreachable issue.
   * verify: a side could not be measured (the patch does not apply, the sandbox did not start).
   */
  SETUP: 3,
  /** The model backend or the run itself failed. */
  RUNTIME: 4,
  /** verify: the verdict is a failure (a regression, a failing test command, a blocking finding). */
  VERIFY_FAILED: 5,
  /** Interrupted (Ctrl-C / SIGINT, SIGTERM). 128 + SIGINT, as shells report it. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** A line telling the user what to do about it. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export class UsageError extends CliError {
  constructor(
    message: string,
    /** Which command's usage to print with the error. */
    readonly command?: string,
  ) {
    super(message, EXIT.USAGE);
    this.name = 'UsageError';
  }
}

export const setupError = (message: string, hint?: string) => new CliError(message, EXIT.SETUP, hint);

/**
 * Reads a file the user named on the command line; a failure is a setup error that names the file (as `what`
 * describes it), its errno code, and what to do (`hint`, by code).
 */
export async function readNamedFile(file: string, what: string, hint: (code?: string) => string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw setupError(`cannot read ${what}${file}${code ? ` (${code})` : ''}`, hint(code));
  }
}
