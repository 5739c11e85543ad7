import type { Verdict, VerifyCommandRun, VerifySide } from '../../src/verify/types.js';

/** A verifier's command run, as src/verify/ would return it. */
export function commandRun(over: Partial<VerifyCommandRun> = {}): VerifyCommandRun {
  return {
    command: 'pytest -q',
    exitCode: 0,
    timedOut: false,
    durationMs: 1200,
    outputTail: '',
    tests: [],
    source: 'junit',
    ...over,
  };
}

export function side(commit: string, tests: VerifyCommandRun[], over: Partial<VerifySide> = {}): VerifySide {
  return { commit, setup: [], tests, ...over };
}

/** A real-shaped verdict: a patch that fixes one test and breaks another, with one finding. */
export function mixedVerdict(over: Partial<Verdict> = {}): Verdict {
  return {
    conclusion: 'failure',
    headline: '1 test fixed, 1 regression: tests/test_math.py::test_sub',
    base: side('a'.repeat(40), [commandRun({ exitCode: 1 })]),
    patched: side('b'.repeat(40), [
      commandRun({ exitCode: 1, outputTail: 'FAILED tests/test_math.py::test_sub - assert 1 == 2' }),
    ]),
    fixed: [{ id: 'tests/test_math.py::test_add', command: 'pytest -q', base: 'failed', patched: 'passed' }],
    regressions: [
      {
        id: 'tests/test_math.py::test_sub',
        command: 'pytest -q',
        base: 'passed',
        patched: 'failed',
        file: 'tests/test_math.py',
        line: 12,
        message: 'assert 1 == 2',
      },
    ],
    stillFailing: [],
    newTests: [],
    testFiles: [],
    findings: [
      {
        kind: 'security',
        tool: 'bandit',
        rule: 'B602',
        severity: 'high',
        file: 'src/calc.py',
        line: 7,
        message: 'subprocess call with shell=True',
      },
    ],
    scans: [
      { tool: 'bandit', ran: true, files: 1 },
      { tool: 'detect-secrets', ran: false, reason: 'not installed in the image' },
    ],
    exitCodesOnly: false,
    durationMs: 5400,
    ...over,
  };
}
