import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './exitCodes.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * util.parseArgs in strict mode, with its TypeErrors ("Unknown option '--foo'") turned into
 * UsageErrors so main() prints the command's usage and exits 2.
 */
export function parseCommandArgs<O extends Options>(command: string, args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new UsageError(message.replace(/\. To specify a positional argument.*$/s, '.'), command);
  }
}

/** A positive whole number from a flag value ("--max-turns 30"). */
export function parsePositiveInt(flag: string, value: string, command: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) <= 0 || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${flag} wants a positive whole number, got '${value}'.`, command);
  }
  return Number(value);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration in milliseconds from "90", "90s", "15m", "1h30m" or "500ms"; a bare number means seconds
 * because that is what people type for a wall time.
 */
export function parseDuration(flag: string, value: string, command: string): number {
  const text = value.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(text)) {
    const ms = Number(text) * 1000;
    if (ms > 0) return Math.round(ms);
  }
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length > 0 && parts.map((p) => p[0]).join('') === text) {
    const ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]], 0);
    if (ms > 0) return Math.round(ms);
  }
  throw new UsageError(`--${flag} wants a duration like 90s, 15m or 1h30m, got '${value}'.`, command);
}

const SANDBOX_KINDS = ['docker', 'bwrap', 'local', 'auto'];

/** --sandbox, checked on the command line so a typo is a usage error (exit 2) before anything is set up. */
export function assertSandboxKind(value: string | undefined, command: string): void {
  if (value !== undefined && !SANDBOX_KINDS.includes(value)) {
    throw new UsageError(`--sandbox must be one of docker, bwrap, local (or auto), got '${value}'.`, command);
  }
}

/** owner/repo#N -> its parts, or a UsageError saying what the form is. */
export function parseIssueRef(value: string, command: string): { owner: string; repo: string; issueNumber: number } {
  const m = /^([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,100})#(\d{1,10})$/.exec(value.trim());
  if (!m || Number(m[3]) <= 0) {
    throw new UsageError(`--github wants owner/repo#NUMBER (e.g. octocat/hello-world#42), got '${value}'.`, command);
  }
  return { owner: m[1], repo: m[2], issueNumber: Number(m[3]) };
}
