import { patchFiles } from '../../src/verify/diffFiles.js';
import { gradeVerdict, taskNames, type GradeInput } from '../../src/verify/grade.js';
import { parseTestRun } from '../../src/verify/parsers/index.js';
import type { Finding, VerifyCommandRun, VerifySide } from '../../src/verify/types.js';

/** A test command's run from pytest -rA summary lines (`PASSED id`, …), parsed as the verifier parses them. */
function pytestRun(lines: string[], exitCode: number | null, command = 'pytest -rA'): VerifyCommandRun {
  const parsed = parseTestRun({ command, exitCode, output: lines.join('\n'), reports: [] });
  return {
    command,
    exitCode,
    timedOut: false,
    durationMs: 1,
    outputTail: '',
    tests: parsed.tests,
    source: parsed.source,
  };
}

const side = (commit: string, tests: VerifyCommandRun[], over: Partial<VerifySide> = {}): VerifySide => ({
  commit,
  setup: [],
  tests,
  ...over,
});

const diff = (path: string, header = 'index 1..2 100644'): string =>
  `diff --git a/${path} b/${path}\n${header}\n--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n-x\n+y\n`;

function grade(base: VerifyCommandRun[], patched: VerifyCommandRun[], over: Partial<GradeInput> = {}) {
  return gradeVerdict({
    base: side('base', base),
    patched: side('patched', patched),
    patchFiles: patchFiles(diff('src/calc.py')),
    findings: [],
    scans: [],
    durationMs: 10,
    ...over,
  });
}

const A = 'tests/test_calc.py::test_a';
const B = 'tests/test_calc.py::test_b';

describe('gradeVerdict', () => {
  it('a fix with no regressions is a success', () => {
    const v = grade(
      [pytestRun([`PASSED ${A}`, `FAILED ${B} - boom`], 1)],
      [pytestRun([`PASSED ${A}`, `PASSED ${B}`], 0)],
    );
    expect(v.conclusion).toBe('success');
    expect(v.headline).toBe('1 test fixed, no regressions');
    expect(v.fixed).toEqual([
      { id: B, command: 'pytest -rA', base: 'failed', patched: 'passed', file: 'tests/test_calc.py' },
    ]);
    expect(v.regressions).toEqual([]);
    expect(v.exitCodesOnly).toBe(false);
  });

  it('fixing one test and breaking another names the regression and fails', () => {
    const v = grade(
      [pytestRun([`PASSED ${A}`, `FAILED ${B}`], 1)],
      [pytestRun([`FAILED ${A} - now broken`, `PASSED ${B}`], 1)],
    );
    expect(v.conclusion).toBe('failure');
    expect(v.headline).toBe(`1 regression: ${A}, 1 test fixed`);
    expect(v.regressions.map((t) => [t.id, t.base, t.patched, t.message])).toEqual([
      [A, 'passed', 'failed', 'now broken'],
    ]);
    expect(v.fixed.map((t) => t.id)).toEqual([B]);
  });

  it('still-failing and new tests are listed, and a failing test command is a failure even without regressions', () => {
    const C = 'tests/test_new.py::test_c';
    const v = grade(
      [pytestRun([`PASSED ${A}`, `FAILED ${B}`], 1)],
      [pytestRun([`PASSED ${A}`, `FAILED ${B}`, `PASSED ${C}`], 1)],
    );
    expect(v.conclusion).toBe('failure');
    expect(v.stillFailing.map((t) => t.id)).toEqual([B]);
    expect(v.newTests.map((t) => [t.id, t.base, t.patched])).toEqual([[C, 'absent', 'passed']]);
    expect(v.headline).toBe('no test fixed, no regressions, 1 test still failing');
  });

  it('SWE-bench v5: a non-zero exit with every parsed test passing is a failing command', () => {
    const v = grade([pytestRun([`PASSED ${A}`], 0)], [pytestRun([`PASSED ${A}`], 3)]);
    expect(v.conclusion).toBe('failure');
    expect(v.headline).toBe('no test fixed, no regressions; `pytest -rA` exited 3 on the patch');
  });

  it('a test command that times out on the patch fails', () => {
    const timedOut = { ...pytestRun([], null), timedOut: true };
    const v = grade([pytestRun([`PASSED ${A}`], 0)], [timedOut]);
    expect(v.conclusion).toBe('failure');
    expect(v.regressions.map((t) => [t.id, t.patched])).toEqual([[A, 'absent']]);
    expect(v.headline).toContain('`pytest -rA` timed out on the patch');
  });

  it('exit codes only: says so in the headline', () => {
    const ok = grade([pytestRun(['OK'], 1)], [pytestRun(['OK'], 0)]);
    expect(ok.exitCodesOnly).toBe(true);
    expect([ok.conclusion, ok.headline]).toEqual(['success', 'tests pass (exit codes only: no per-test report)']);
    const bad = grade([pytestRun(['OK'], 0)], [pytestRun(['bad'], 1)]);
    expect([bad.conclusion, bad.headline]).toEqual([
      'failure',
      'tests fail: `pytest -rA` exited 1 (exit codes only: no per-test report)',
    ]);
  });

  it('is neutral with nothing to run, or a side that could not be measured, and says why', () => {
    expect(grade([], [])).toMatchObject({ conclusion: 'neutral', headline: 'nothing to verify: no test commands' });
    const run = pytestRun([`PASSED ${A}`], 0);
    const v = gradeVerdict({
      base: side('base', [], { notRun: 'sandbox did not start' }),
      patched: side('patched', [run]),
      patchFiles: [],
      findings: [],
      scans: [],
      durationMs: 1,
    });
    expect([v.conclusion, v.headline]).toEqual([
      'neutral',
      'not verified: the base could not be measured (sandbox did not start)',
    ]);
    const setupFailed = { ...pytestRun([], 1, 'pip install -e .'), source: 'exit_code' as const };
    const baseSetup = grade([run], [run], { base: side('base', [run], { setup: [setupFailed] }) });
    expect(baseSetup.conclusion).toBe('neutral');
    expect(baseSetup.headline).toBe('not verified: set-up fails on the base, `pip install -e .` exited 1');
  });

  it('a set-up the patch breaks is a failure, named', () => {
    const setupFailed = { ...pytestRun([], 1, 'pip install -e .'), source: 'exit_code' as const };
    const notRun = { ...pytestRun([], null), notRun: 'an earlier set-up command failed' };
    const v = grade([pytestRun([`PASSED ${A}`], 0)], [notRun], {
      patched: side('patched', [notRun], { setup: [setupFailed] }),
    });
    expect(v.conclusion).toBe('failure');
    expect(v.headline).toBe('set-up fails on the patch: `pip install -e .` exited 1');
  });

  it('a patch that deletes or skips the failing test is named as doing so, never fixed', () => {
    const tests = patchFiles(diff('tests/test_calc.py'));
    const deleted = grade([pytestRun([`PASSED ${A}`, `FAILED ${B}`], 1)], [pytestRun([`PASSED ${A}`], 0)], {
      patchFiles: tests,
    });
    expect(deleted.conclusion).toBe('failure');
    expect(deleted.fixed).toEqual([]);
    expect(deleted.headline).toBe(`the patch removes the failing test ${B} instead of fixing, no regressions`);
    expect(deleted.testFiles).toEqual([
      { file: 'tests/test_calc.py', change: 'modified', removedTests: [B], newlySkipped: [], changedTests: [] },
    ]);
    expect(deleted.stillFailing.map((t) => [t.id, t.patched])).toEqual([[B, 'absent']]);

    const skipped = grade(
      [pytestRun([`PASSED ${A}`, `FAILED ${B}`], 1)],
      [pytestRun([`PASSED ${A}`, `XFAIL ${B}`], 0)],
      {
        patchFiles: tests,
      },
    );
    expect(skipped.headline).toBe(`the patch skips the failing test ${B} instead of fixing, no regressions`);
    expect(skipped.testFiles[0].newlySkipped).toEqual([B]);
  });

  it('a passing test removed or skipped is a regression unless the task names it', () => {
    const base = [pytestRun([`PASSED ${A}`, `PASSED ${B}`], 0)];
    const patched = [pytestRun([`PASSED ${A}`], 0)];
    const v = grade(base, patched);
    expect(v.conclusion).toBe('failure');
    expect(v.regressions.map((t) => [t.id, t.patched])).toEqual([[B, 'absent']]);
    // The patch did not touch the test file: the removal is still named, under the file, as `unchanged`.
    expect(v.testFiles).toEqual([
      { file: 'tests/test_calc.py', change: 'unchanged', removedTests: [B], newlySkipped: [], changedTests: [] },
    ]);
    const asked = grade(base, patched, { task: 'Remove the obsolete test_b, it tests a removed API.' });
    expect(asked.conclusion).toBe('success');
    expect(asked.regressions).toEqual([]);
    expect(asked.testFiles[0].removedTests).toEqual([B]);
  });

  it('findings: a secret or a high-severity finding fails; others are counted', () => {
    const run = [pytestRun([`PASSED ${A}`], 0)];
    const finding = (over: Partial<Finding>): Finding => ({
      kind: 'security',
      tool: 'bandit',
      rule: 'B602',
      severity: 'medium',
      file: 'src/calc.py',
      line: 3,
      message: 'subprocess call with shell=True',
      ...over,
    });
    const medium = grade(run, run, { findings: [finding({})] });
    expect([medium.conclusion, medium.headline]).toEqual(['success', 'no test fixed, no regressions; 1 other finding']);
    expect(grade(run, run, { findings: [finding({ severity: 'high' })] }).conclusion).toBe('failure');
    const secret = grade(run, run, {
      findings: [finding({ kind: 'secret', severity: 'low', rule: 'AWS Access Key' })],
    });
    expect([secret.conclusion, secret.headline]).toEqual([
      'failure',
      'no test fixed, no regressions; 1 blocking finding',
    ]);
  });

  it('base tests on the patch judge the code: a test edited into passing fixes nothing, one edited to hide a break is a regression', () => {
    const tests = patchFiles(diff('tests/test_calc.py'));
    const base = [pytestRun([`PASSED ${A}`, `FAILED ${B}`], 1)];
    const patched = [pytestRun([`PASSED ${A}`, `PASSED ${B}`], 0)];
    const btp = side('btp', [pytestRun([`FAILED ${A} - broken by the patch`, `FAILED ${B} - still broken`], 1)]);
    const v = grade(base, patched, { patchFiles: tests, baseTestsOnPatch: btp });
    expect(v.conclusion).toBe('failure');
    expect(v.fixed).toEqual([]);
    expect(v.regressions.map((t) => [t.id, t.patched, t.baseTestsOnPatch, t.message])).toEqual([
      [A, 'passed', 'failed', 'broken by the patch'],
    ]);
    expect(v.stillFailing.map((t) => t.id)).toEqual([B]);
    expect(v.testFiles[0].changedTests).toEqual([A, B]);
    expect(v.baseTestsOnPatch).toBe(btp);
  });

  it('joins tests per command: the same id under two commands is two tests', () => {
    const v = grade(
      [pytestRun([`PASSED ${A}`], 0, 'one'), pytestRun([`FAILED ${A}`], 1, 'two')],
      [pytestRun([`PASSED ${A}`], 0, 'one'), pytestRun([`PASSED ${A}`], 0, 'two')],
    );
    expect(v.fixed.map((t) => t.command)).toEqual(['two']);
    expect(v.conclusion).toBe('success');
  });
});

describe('taskNames', () => {
  it('matches a full id or a last name part as a whole word, never a short or partial name', () => {
    const named = taskNames('Please delete tests/a.py::test_old and the test_legacy_api test. Also `renders empty`.');
    expect(named('tests/a.py::test_old')).toBe(true);
    expect(named('tests/b.py::TestX::test_legacy_api[1-2]')).toBe(true);
    expect(named('src/x.test.js › list › renders empty')).toBe(true);
    expect(named('tests/b.py::test_legacy')).toBe(false);
    expect(named('tests/b.py::test')).toBe(false);
    expect(taskNames(undefined)('tests/a.py::test_old')).toBe(false);
  });
});
