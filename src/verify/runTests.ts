import { readFileSync } from 'node:fs';
import { tail } from '../leaf/text.js';
import { COMMAND_OUTPUT_TAIL_CHARS } from '../leaf/botCommands.js';
import type { Sandbox } from '../sandbox/types.js';
import { redact } from '../util/redact.js';
import { parseTestRun } from './parsers/index.js';
import type { VerifyCommandRun } from './types.js';

/**
 * One test command of a verification side, and its report files read INSIDE the sandbox in the same clean shell
 * (bwrap's /tmp lives only as long as one command): pytest is asked for a JUnit report in the shell's own TMPDIR
 * through PYTEST_ADDOPTS (the repository's command is not changed), and reportReader.py reads that report and the
 * `verify.reports` globs with byte caps, printing bounded JSON on stderr. The host parses text, never a file.
 */

/** Caps on what comes out of the sandbox for one command. */
export const REPORT_LIMITS = { maxFileBytes: 4 * 1024 * 1024, maxTotalBytes: 8 * 1024 * 1024, maxFiles: 50 };
/** The command's own output kept for the log parsers (stdout and stderr as one stream). */
export const MAX_TEST_OUTPUT_BYTES = 4 * 1024 * 1024;

let readerScript: string | undefined;
function reportReaderScript(): string {
  readerScript ??= readFileSync(new URL('./reportReader.py', import.meta.url), 'utf8');
  return readerScript;
}

/**
 * The wrapper, run by the clean shell: the variables that carry the command, the reader and its request are
 * taken out of the environment before the command runs; the command's stderr joins its stdout, so stderr carries
 * only the reader's JSON.
 */
const WRAPPER = `r="$TMPDIR/frognano-reports"; mkdir -p "$r" || exit 125
c=$FN_VERIFY_COMMAND s=$FN_REPORT_READER q=$FN_REPORT_REQUEST
unset FN_VERIFY_COMMAND FN_REPORT_READER FN_REPORT_REQUEST
( export PYTEST_ADDOPTS="\${PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }--junitxml=$r/pytest-junit.xml"
  exec /bin/bash --noprofile --norc -c "$c" ) </dev/null 2>&1
rc=$?
printf '%s' "$q" | /usr/bin/python3 -I -c "$s" "$r" >&2
exit $rc`;

interface ReaderAnswer {
  reports: { path: string; text: string; truncated: boolean }[];
  notes: string[];
}

function readerAnswer(stderr: string): ReaderAnswer {
  try {
    const a = JSON.parse(stderr.slice(stderr.indexOf('{"reports"'))) as ReaderAnswer;
    if (Array.isArray(a.reports)) return a;
  } catch {
    /* the reader did not run to the end (killed, no python3): no reports */
  }
  return { reports: [], notes: ['the report files could not be read in the sandbox'] };
}

export interface TestCommandOptions {
  timeoutMs: number;
  reportGlobs: string[];
  signal?: AbortSignal;
}

/** Runs one test command (no network) and parses its per-test results. Never throws for the command's failure. */
export async function runTestCommand(
  sandbox: Sandbox,
  command: string,
  o: TestCommandOptions,
): Promise<VerifyCommandRun> {
  const request = JSON.stringify({ workdir: sandbox.workdir, globs: o.reportGlobs, ...REPORT_LIMITS });
  const r = await sandbox.exec(WRAPPER, {
    clean: true,
    network: false,
    timeoutMs: o.timeoutMs,
    signal: o.signal,
    maxOutputBytes: MAX_TEST_OUTPUT_BYTES + REPORT_LIMITS.maxTotalBytes * 2,
    env: {
      FN_VERIFY_COMMAND: command,
      FN_REPORT_READER: reportReaderScript(),
      FN_REPORT_REQUEST: request,
    },
  });
  const output = r.stdout.length > MAX_TEST_OUTPUT_BYTES ? r.stdout.slice(-MAX_TEST_OUTPUT_BYTES) : r.stdout;
  const base = { command, exitCode: r.exitCode, timedOut: r.timedOut, durationMs: r.durationMs };
  const outputTail = redact(tail(output, COMMAND_OUTPUT_TAIL_CHARS));
  if (r.timedOut || r.cancelled) {
    const notRun = r.cancelled ? 'cancelled' : `timed out after ${Math.round(o.timeoutMs / 1000)} s`;
    return { ...base, outputTail, tests: [], source: 'exit_code', notRun };
  }
  const { reports } = readerAnswer(r.stderr);
  const parsed = parseTestRun({ command, exitCode: r.exitCode, output, reports });
  return { ...base, outputTail, tests: parsed.tests, source: parsed.source };
}
