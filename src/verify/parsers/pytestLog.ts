import type { TestCaseResult } from '../types.js';
import type { TestCollector } from './limits.js';

/**
 * pytest's plain output: the `-rA` short test summary (`PASSED tests/test_a.py::test_b`, `FAILED path::id - message`)
 * and verbose lines (`tests/test_a.py::test_b PASSED [ 50%]`). Ids are pytest node ids, the same on both sides.
 * XFAIL counts as skipped (an expected failure is not a pass the patch earned), XPASS as passed; summary SKIPPED lines
 * name a file and line, not a test, so they are left out (a skipped test in verbose output is kept).
 */
const STATUS: Record<string, TestCaseResult['status']> = {
  PASSED: 'passed',
  FAILED: 'failed',
  ERROR: 'error',
  SKIPPED: 'skipped',
  XFAIL: 'skipped',
  XPASS: 'passed',
};
const SUMMARY = /^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+::\S.*?)(?: - (.*))?$/;
const VERBOSE = /^(\S+::\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?: \(.*\))?(?:\s+\[\s*\d+%\])?$/;
const NODE_FILE = /^([^:]+\.py)::/;

function add(into: TestCollector, id: string, word: string, message?: string): void {
  const file = NODE_FILE.exec(id)?.[1];
  into.add({ id, status: STATUS[word], file, message });
}

/** Returns whether any test line was found. */
export function parsePytestLog(output: string, into: TestCollector): boolean {
  let any = false;
  for (const raw of output.split('\n')) {
    const line = raw.replace(/\r$/, '').trimEnd();
    const summary = SUMMARY.exec(line);
    if (summary) {
      add(into, summary[2].trim(), summary[1], summary[3]);
      any = true;
      continue;
    }
    const verbose = VERBOSE.exec(line);
    if (verbose) {
      add(into, verbose[1].trim(), verbose[2]);
      any = true;
    }
  }
  return any;
}
