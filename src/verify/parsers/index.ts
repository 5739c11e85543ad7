import type { TestCaseResult, TestSource } from '../types.js';
import { parseCargoLog } from './cargoLog.js';
import { parseGoJson } from './goJson.js';
import { jestJsonInOutput, parseJestJson } from './jestJson.js';
import { parseJunit } from './junit.js';
import { TestCollector } from './limits.js';
import { parsePytestLog } from './pytestLog.js';
import { parseUnittestLog } from './unittestLog.js';
import { XmlRefused } from './xml.js';

export { MAX_TESTS_PER_COMMAND } from './limits.js';

/** What one test command left behind, as the verifier read it inside the sandbox. */
export interface TestRunEvidence {
  command: string;
  exitCode: number | null;
  /** stdout+stderr of the command as it came out of the sandbox (already byte-capped). */
  output: string;
  /** Report files read INSIDE the sandbox (JUnit XML, jest/go JSON …), repository-relative path + bounded text. */
  reports: { path: string; text: string }[];
}

export interface ParsedTestRun {
  source: TestSource;
  tests: TestCaseResult[];
  /** Why a report was not used, the test-count cap, the v5 exit-code rule …: one line each, for the run page. */
  notes: string[];
}

type Reader = (text: string, into: TestCollector) => boolean;

function readReport(text: string, into: TestCollector): TestSource | undefined {
  const head = text.replace(/^\uFEFF/, '').trimStart();
  if (head.startsWith('<')) return parseJunit(head, into) ? 'junit' : undefined;
  if (head.startsWith('{"Time"') || head.startsWith('{"Action"'))
    return parseGoJson(head, into) ? 'go-json' : undefined;
  if (head.startsWith('{')) return parseJestJson(head, into) ? 'jest-json' : undefined;
  return undefined;
}

function fromReports(e: TestRunEvidence, into: TestCollector, notes: string[]): TestSource | undefined {
  let source: TestSource | undefined;
  for (const report of e.reports) {
    try {
      const got = readReport(report.text, into);
      if (got === undefined) notes.push(`report ${report.path}: no test results in it`);
      source ??= got;
    } catch (error) {
      if (!(error instanceof XmlRefused)) throw error;
      notes.push(`report ${report.path} not read: ${error.message}`);
    }
  }
  return source;
}

const LOG_READERS: [TestSource, Reader][] = [
  ['jest-json', (text, into) => parseJestJsonInOutput(text, into)],
  ['go-json', parseGoJson],
  ['pytest-log', parsePytestLog],
  ['unittest-log', parseUnittestLog],
  ['cargo-log', parseCargoLog],
];

function parseJestJsonInOutput(text: string, into: TestCollector): boolean {
  const json = jestJsonInOutput(text);
  return json !== undefined && parseJestJson(json, into);
}

function fromOutput(output: string): { source: TestSource; into: TestCollector } | undefined {
  for (const [source, read] of LOG_READERS) {
    const into = new TestCollector();
    if (read(output, into) && into.size > 0) return { source, into };
  }
  return undefined;
}

/**
 * Per-test results of one test command: its report files first (they say more and cannot be confused by printed
 * text), then its output (jest/go JSON lines, pytest, unittest, cargo), else none (`exit_code`: the exit code is the
 * verdict). SWE-bench v5's rule is kept in a note here and enforced by grading: a non-zero exit with no failing test
 * parsed is a failing command, never a pass.
 */
export function parseTestRun(e: TestRunEvidence): ParsedTestRun {
  const notes: string[] = [];
  let into = new TestCollector();
  let source = fromReports(e, into, notes);
  if (source === undefined || into.size === 0) {
    const logged = fromOutput(e.output);
    if (logged) ({ source, into } = logged);
  }
  if (source === undefined || into.size === 0) return { source: 'exit_code', tests: [], notes };
  if (into.truncated) notes.push(`more than ${into.size} tests: the rest were not read`);
  const tests = into.results();
  const failing = tests.some((t) => t.status === 'failed' || t.status === 'error');
  if (e.exitCode !== 0 && !failing) {
    notes.push(`exited ${e.exitCode ?? 'without a code'} with no failing test parsed: the command counts as failing`);
  }
  return { source, tests, notes };
}
