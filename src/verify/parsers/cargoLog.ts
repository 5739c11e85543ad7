import type { TestCaseResult } from '../types.js';
import { repoRelative, type TestCollector } from './limits.js';

/**
 * `cargo test`'s plain output (libtest's pretty format, one `test NAME ... ok` line per test). Each test binary is
 * introduced by `Running [unittests ]PATH (target/…/deps/STEM-HASH)` or `Doc-tests CRATE`, and the same test name may
 * exist in several binaries, so ids are `STEM::NAME` (the hash dropped: it differs between base and patch) and
 * `CRATE (doc)::NAME`. With `--nocapture` a test's output interleaves with the result lines, so a result word may
 * arrive on a later line; the binary's own `test result: N passed; N failed; N ignored` line is the check: when the
 * lines read disagree with it anywhere, nothing per-test is returned and the exit code stays the verdict. Quiet mode
 * (`-q`) names no passing test, so it yields nothing either (a partial list would read as deleted tests).
 */
const RUNNING = /^\s*Running (?:unittests )?(\S+) \((?:.*[\\/])?([^\\/()]+?)(?:-[0-9a-f]{16})?(?:\.exe)?\)\s*$/;
const DOC_TESTS = /^\s*Doc-tests (\S+)\s*$/;
const TEST_LINE = /^test (.+?)(?: - should panic(?: with .*)?)? \.\.\. ?(.*)$/;
const WORD = /^(ok|FAILED|ignored)\b/;
// A late word may be glued to the next output (`oknote: run with …`); the summary check catches a misread.
const LATE_WORD = /^(ok|FAILED|ignored)/;
const SUMMARY = /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;/;
// 1.73+: `thread 'NAME' (ID) panicked at FILE:LINE:COL:`; before: `thread 'NAME' panicked at 'MSG', FILE:LINE:COL`.
const PANIC = /^thread '(.+?)'(?: \(\d+\))? panicked at (?:'.*', )?(.+?):(\d+):\d+:?$/;

const STATUS: Record<string, TestCaseResult['status']> = { ok: 'passed', FAILED: 'failed', ignored: 'skipped' };

interface Binary {
  prefix: string;
  /** The integration test's file; unit tests live anywhere under src/, so only a panic location names theirs. */
  file?: string;
  status: Map<string, TestCaseResult['status']>;
  where: Map<string, { file?: string; line: number; message?: string }>;
  pending?: string;
  inFailureList: boolean;
}

function newBinary(line: string): Binary | undefined {
  const running = RUNNING.exec(line);
  if (running) {
    const file = running[1].startsWith('tests/') ? repoRelative(running[1]) : undefined;
    return { prefix: running[2], file, status: new Map(), where: new Map(), inFailureList: false };
  }
  const doc = DOC_TESTS.exec(line);
  if (doc) return { prefix: `${doc[1]} (doc)`, status: new Map(), where: new Map(), inFailureList: false };
  return undefined;
}

/** Whether the binary's lines agree with its summary line. */
function agrees(b: Binary, summary: RegExpExecArray): boolean {
  const count = (s: TestCaseResult['status']): number => [...b.status.values()].filter((v) => v === s).length;
  return (
    b.pending === undefined &&
    count('passed') === Number(summary[1]) &&
    count('failed') === Number(summary[2]) &&
    count('skipped') === Number(summary[3])
  );
}

function flush(b: Binary, into: TestCaseResult[]): void {
  for (const [name, status] of b.status) {
    const at = b.where.get(name);
    into.push({ id: `${b.prefix}::${name}`, status, file: at?.file ?? b.file, line: at?.line, message: at?.message });
  }
}

/** One line inside a binary's section. */
function readLine(b: Binary, line: string, next: string | undefined): void {
  if (b.inFailureList) {
    if (line.startsWith('    ') && line.trim() !== '') {
      b.status.set(line.trim(), 'failed');
      return;
    }
    b.inFailureList = false;
  }
  if (line === 'failures:' && next?.startsWith('    ')) {
    b.inFailureList = true;
    return;
  }
  const panic = PANIC.exec(line);
  if (panic) {
    const message = next?.trim() || undefined;
    b.where.set(panic[1], { file: repoRelative(panic[2]), line: Number(panic[3]), message });
  }
  const test = TEST_LINE.exec(line);
  if (test) {
    const word = WORD.exec(test[2]);
    if (word) b.status.set(test[1], STATUS[word[1]]);
    else if (!test[2].startsWith('bench:')) b.pending = test[1];
    if (word) b.pending = undefined;
    return;
  }
  const late = b.pending === undefined ? null : LATE_WORD.exec(line);
  if (late && b.pending !== undefined) {
    b.status.set(b.pending, STATUS[late[1]]);
    b.pending = undefined;
  }
}

/** Returns whether any test line was found (and every binary's lines agreed with its summary). */
export function parseCargoLog(output: string, into: TestCollector): boolean {
  const lines = output.split('\n').map((l) => l.replace(/\r$/, ''));
  const found: TestCaseResult[] = [];
  let binary: Binary | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const started = newBinary(line);
    if (started) {
      binary = started;
      continue;
    }
    if (binary === undefined) continue;
    const summary = SUMMARY.exec(line);
    if (summary) {
      if (!agrees(binary, summary)) return false;
      flush(binary, found);
      binary = undefined;
      continue;
    }
    readLine(binary, line, lines[i + 1]);
  }
  for (const test of found) into.add(test);
  return found.length > 0;
}
