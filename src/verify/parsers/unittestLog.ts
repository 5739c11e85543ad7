import type { TestCaseResult } from '../types.js';
import type { TestCollector } from './limits.js';

/**
 * unittest's verbose output (`python -m unittest -v`, also Django's runner): `test_x (mod.Class.test_x) ... ok` on
 * Python 3.11+, `test_x (mod.Class) ... ok` before; the result word may follow on a later line when the test printed,
 * and a docstring's first line may sit between the name and ` ... `. The id is always `mod.Class.test_x`.
 * `expected failure` counts as skipped, `unexpected success` as failed (unittest itself fails the run on it).
 */
const HEAD = /^(\w+) \(([\w.]+)\)(.*)$/;
// Output the test printed without a newline sits between ` ... ` and the word (`... printedok`).
const RESULT = / \.\.\. .*?(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)$/;
const LONE_RESULT = /^(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)$/;

function statusOf(word: string): TestCaseResult['status'] {
  if (word === 'ok') return 'passed';
  if (word === 'FAIL' || word === 'unexpected success') return 'failed';
  if (word === 'ERROR') return 'error';
  return 'skipped';
}

function idOf(method: string, inParens: string): string {
  return inParens === method || inParens.endsWith(`.${method}`) ? inParens : `${inParens}.${method}`;
}

/** Returns whether any test line was found. */
export function parseUnittestLog(output: string, into: TestCollector): boolean {
  let pending: string | undefined;
  let any = false;
  const lines = output.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, '');
    const head = HEAD.exec(line);
    if (head) pending = idOf(head[1], head[2]);
    if (pending === undefined) continue;
    const result = RESULT.exec(line) ?? (head ? null : LONE_RESULT.exec(line.trim()));
    if (result) {
      into.add({ id: pending, status: statusOf(result[1]) });
      any = true;
      pending = undefined;
    }
  }
  return any;
}
