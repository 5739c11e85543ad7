import type { CommandResult } from '../leaf/botCommands.js';

/**
 * What test runners print when they found nothing to run. Several exit 0 then (unittest before Python 3.12, cargo,
 * `go test` without test files), so an exit code of 0 alone would report "✓ passed" for a run of zero tests.
 */
const NO_TESTS_RAN = [
  /\bRan 0 tests\b/, // unittest
  /\bNO TESTS RAN\b/, // unittest 3.12+, exit 5
  /\bcollected 0 items\b/, // pytest (exit 5)
  /\brunning 0 tests\b/, // cargo test
  /\bno test files\b/, // go test
  /\bNo tests found\b/, // jest
  /\b0 (?:tests?|specs?|examples?) (?:ran|run|executed|found)\b/i,
];

/** True when the command's output says it ran no test at all. */
export function ranNoTests(outputTail: string): boolean {
  return NO_TESTS_RAN.some((re) => re.test(outputTail));
}

/** The status word of a test command in the summary: a pass needs exit code 0 AND at least one test run. */
export function testCommandStatus(c: CommandResult): string {
  if (c.timedOut) return '✗ timed out';
  if (c.exitCode === 0) return ranNoTests(c.outputTail) ? '⚠ 0 tests ran' : '✓ passed';
  if (ranNoTests(c.outputTail)) return `✗ 0 tests ran (exit ${c.exitCode ?? 'killed'})`;
  return `✗ exit ${c.exitCode ?? 'killed'}`;
}
