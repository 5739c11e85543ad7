import { verdictText } from '../../src/cli/verdictText.js';
import { verifyExitCode } from '../../src/cli/commands/verify.js';
import { commandRun, mixedVerdict, side } from '../support/verdicts.js';

describe('verdictText (what verify and solve print)', () => {
  test('headline, fixed, regressions with names, findings as file:line:rule, exit codes base → patched', () => {
    const text = verdictText(mixedVerdict()).join('\n');
    expect(text).toMatch(/^Verification: ✗ failure: 1 test fixed, 1 regression: tests\/test_math\.py::test_sub$/m);
    expect(text).toContain('Fixed (1):\n    tests/test_math.py::test_add\n');
    expect(text).toContain(
      'Regressions (1):\n    tests/test_math.py::test_sub: passed → failed  (tests/test_math.py:12) — assert 1 == 2',
    );
    expect(text).toContain('src/calc.py:7:B602  high security (bandit): subprocess call with shell=True');
    expect(text).toContain('Scans: bandit ran; detect-secrets not run (not installed in the image)');
    expect(text).toMatch(/test +exit 1 → exit 1 +pytest -q$/m);
  });

  test('names from the repository cannot send terminal escapes or split lines', () => {
    const v = mixedVerdict();
    v.regressions[0].id = 'tests/t.py::test_x\x1b]8;;http://evil\x07\nFAKE: Verification: ✓ success\u202e';
    const text = verdictText(v).join('\n');
    expect(text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\u202e]/);
    expect(text).not.toMatch(/^FAKE/m);
    expect(text).toContain('tests/t.py::test_x ]8;;http://evil FAKE: Verification: ✓ success: passed → failed');
  });

  test('exit codes: failure 5, success and neutral 0, a side not measured 3', () => {
    expect(verifyExitCode(mixedVerdict())).toBe(5);
    expect(verifyExitCode(mixedVerdict({ conclusion: 'success' }))).toBe(0);
    expect(verifyExitCode(mixedVerdict({ conclusion: 'neutral' }))).toBe(0);
    const unapplied = side('b'.repeat(40), [commandRun()], { notRun: 'the patch does not apply to the base commit' });
    expect(verifyExitCode(mixedVerdict({ conclusion: 'neutral', patched: unapplied }))).toBe(3);
  });
});
