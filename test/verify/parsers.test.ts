import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseTestRun, type TestRunEvidence } from '../../src/verify/parsers/index.js';
import { parseJunit } from '../../src/verify/parsers/junit.js';
import {
  MAX_MESSAGE_CHARS,
  MAX_TEST_ID_CHARS,
  MAX_TESTS_PER_COMMAND,
  TestCollector,
} from '../../src/verify/parsers/limits.js';
import type { TestCaseResult } from '../../src/verify/types.js';

// Recorded on this machine from test/fixtures/verify/projects/ run under bwrap at /workspace (as in the sandbox).
const recorded = (name: string): string =>
  readFileSync(path.join(import.meta.dirname, '../fixtures/verify/recorded', name), 'utf8');

const evidence = (over: Partial<TestRunEvidence>): TestRunEvidence => ({
  command: 'tests',
  exitCode: 1,
  output: '',
  reports: [],
  ...over,
});

const statuses = (tests: TestCaseResult[]): Record<string, string> =>
  Object.fromEntries(tests.map((t) => [t.id, t.status]));

describe('pytest output', () => {
  const expected = {
    'tests/test_calc.py::test_add': 'passed',
    'tests/test_calc.py::test_add_wrong': 'failed',
    'tests/test_calc.py::test_known_bug': 'skipped',
    'tests/test_calc.py::test_param[1-1]': 'passed',
    'tests/test_calc.py::test_param[2-3]': 'failed',
    'tests/test_calc.py::test_with_broken_fixture': 'error',
    'tests/test_calc.py::TestGroup::test_inside': 'passed',
  };

  it('reads the -rA short summary', () => {
    const run = parseTestRun(evidence({ output: recorded('pytest-rA.txt') }));
    expect(run.source).toBe('pytest-log');
    expect(statuses(run.tests)).toEqual(expected);
    const wrong = run.tests.find((t) => t.id === 'tests/test_calc.py::test_add_wrong');
    expect(wrong).toMatchObject({ file: 'tests/test_calc.py', message: 'AssertionError: add is off by one' });
  });

  it('reads verbose lines too, and a skipped test by its id', () => {
    const run = parseTestRun(evidence({ output: recorded('pytest-rA-v.txt') }));
    expect(statuses(run.tests)).toEqual({ ...expected, 'tests/test_calc.py::test_skipped': 'skipped' });
  });
});

describe('JUnit XML', () => {
  it('reads pytest --junitxml', () => {
    const run = parseTestRun(evidence({ reports: [{ path: 'report.xml', text: recorded('pytest-junit.xml') }] }));
    expect(run.source).toBe('junit');
    expect(statuses(run.tests)).toEqual({
      'tests.test_calc::test_add': 'passed',
      'tests.test_calc::test_add_wrong': 'failed',
      'tests.test_calc::test_skipped': 'skipped',
      'tests.test_calc::test_known_bug': 'skipped',
      'tests.test_calc::test_param[1-1]': 'passed',
      'tests.test_calc::test_param[2-3]': 'failed',
      'tests.test_calc::test_with_broken_fixture': 'error',
      'tests.test_calc.TestGroup::test_inside': 'passed',
    });
    const wrong = run.tests.find((t) => t.id === 'tests.test_calc::test_add_wrong');
    expect(wrong?.message).toBe('AssertionError: add is off by one assert 3 == 4 + where 3 = add(1, 2)');
  });

  it('takes file and line, decodes the predefined entities and uses element text when there is no message', () => {
    const doc = `<?xml version="1.0"?><testsuite><testcase classname="a b" name="a b" file="/workspace/src/x.test.js" line="7">
      <failure><![CDATA[expected <1>]]> &amp; more</failure></testcase><testcase name="ok"/></testsuite>`;
    const into = new TestCollector();
    expect(parseJunit(doc, into)).toBe(true);
    expect(into.results()).toEqual([
      { id: 'src/x.test.js::a b', status: 'failed', file: 'src/x.test.js', line: 7, message: 'expected <1> & more' },
      { id: 'ok', status: 'passed' },
    ]);
  });

  it.each([
    ['a DOCTYPE', '<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite><testcase name="t">&a;</testcase></testsuite>'],
    ['an ENTITY declaration', '<testsuite><!ENTITY a SYSTEM "file:///etc/passwd"><testcase name="t"/></testsuite>'],
    ['nesting past the depth bound', `${'<a>'.repeat(40)}<testcase name="t"/>${'</a>'.repeat(40)}`],
    ['mismatched tags', '<testsuite><testcase name="t"></testsuite>'],
  ])('refuses %s and falls back to the log', (_what, doc) => {
    const run = parseTestRun(
      evidence({ reports: [{ path: 'r.xml', text: doc }], output: 'PASSED tests/test_a.py::test_x\n', exitCode: 0 }),
    );
    expect(run.source).toBe('pytest-log');
    expect(run.notes.join('\n')).toMatch(/report r\.xml not read/);
  });

  it('does not expand entities it does not know', () => {
    const into = new TestCollector();
    parseJunit('<testsuite><testcase name="t"><failure message="&xxe; &#65;"/></testcase></testsuite>', into);
    expect(into.results()[0].message).toBe('&xxe; A');
  });
});

describe('unittest output', () => {
  it('reads -v lines, docstrings, printed output and every outcome', () => {
    const run = parseTestRun(evidence({ output: recorded('unittest-v.txt') }));
    expect(run.source).toBe('unittest-log');
    const p = 'tests.test_units.TestUnits.';
    expect(statuses(run.tests)).toEqual({
      [`${p}test_doc`]: 'passed',
      [`${p}test_error`]: 'error',
      [`${p}test_expected`]: 'skipped',
      [`${p}test_fail`]: 'failed',
      [`${p}test_ok`]: 'passed',
      [`${p}test_prints`]: 'passed',
      [`${p}test_skip`]: 'skipped',
    });
  });

  it('gives the same id for the pre-3.11 form and a result on a later line', () => {
    const out = 'test_a (pkg.mod.T) ... ok\ntest_b (pkg.mod.T) ... printed\nFAIL\n';
    expect(statuses(parseTestRun(evidence({ output: out })).tests)).toEqual({
      'pkg.mod.T.test_a': 'passed',
      'pkg.mod.T.test_b': 'failed',
    });
  });
});

describe('cargo test output', () => {
  const expected = {
    'calc::tests::adds': 'passed',
    'calc::tests::panics': 'passed',
    'calc::tests::slow': 'skipped',
    'calc::tests::with_reason': 'skipped',
    'calc::tests::subtracts': 'failed',
    'integration::adds': 'passed',
    'integration::subtracts': 'failed',
    'calc (doc)::src/lib.rs - add (line 3)': 'passed',
    'calc (doc)::src/lib.rs - sub (line 12)': 'failed',
  };

  it('reads every binary, doc tests and the failure locations', () => {
    const run = parseTestRun(evidence({ exitCode: 101, output: recorded('cargo-test.txt') }));
    expect(run.source).toBe('cargo-log');
    expect(statuses(run.tests)).toEqual(expected);
    const failed = run.tests.find((t) => t.id === 'calc::tests::subtracts');
    expect(failed).toMatchObject({ file: 'src/lib.rs', line: 31, message: 'assertion `left == right` failed' });
    expect(run.tests.find((t) => t.id === 'integration::subtracts')).toMatchObject({
      file: 'tests/integration.rs',
      line: 8,
    });
    expect(run.tests.find((t) => t.id === 'integration::adds')?.file).toBe('tests/integration.rs');
  });

  it('reads --nocapture output, where a result word comes after the test printed', () => {
    const run = parseTestRun(evidence({ exitCode: 101, output: recorded('cargo-test-nocapture.txt') }));
    expect(statuses(run.tests)).toEqual(expected);
  });

  it('gives nothing per test when the lines disagree with the summary, or in quiet mode', () => {
    const lines = recorded('cargo-test.txt').replace('test tests::adds ... ok\n', '');
    expect(parseTestRun(evidence({ exitCode: 101, output: lines })).source).toBe('exit_code');
    const forged = recorded('cargo-test.txt').replace('test adds ... ok', 'test adds ... ok\ntest extra ... ok');
    expect(parseTestRun(evidence({ exitCode: 101, output: forged })).source).toBe('exit_code');
    const quiet = 'running 3 tests\n.i.\ntest result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n';
    expect(
      parseTestRun(
        evidence({ exitCode: 0, output: `     Running unittests src/lib.rs (x-0123456789abcdef)\n${quiet}` }),
      ).source,
    ).toBe('exit_code');
  });
});

describe('jest --json', () => {
  const expected = {
    'calc.test.js › add › adds': 'passed',
    'calc.test.js › add › is off by one': 'failed',
    'calc.test.js › add › skipped one': 'skipped',
    'calc.test.js › add › to do': 'skipped',
    'calc.test.js › top level': 'passed',
    'broken.test.js': 'error',
  };

  it('reads the --outputFile report, paths made repository-relative', () => {
    const run = parseTestRun(evidence({ reports: [{ path: 'jest.json', text: recorded('jest.json') }] }));
    expect(run.source).toBe('jest-json');
    expect(statuses(run.tests)).toEqual(expected);
    expect(run.tests.find((t) => t.id === 'broken.test.js')?.message).toMatch(/Cannot find module/);
  });

  it('finds the JSON line in the output when there is no report file', () => {
    const run = parseTestRun(evidence({ output: recorded('jest-json-stdout.txt') }));
    expect(run.source).toBe('jest-json');
    expect(statuses(run.tests)).toEqual(expected);
  });
});

describe('go test -json', () => {
  it('keeps the last action per test and names a package that failed to build', () => {
    const out = [
      '{"Action":"run","Package":"ex/a","Test":"TestA"}',
      '{"Action":"pass","Package":"ex/a","Test":"TestA","Elapsed":0}',
      '{"Action":"fail","Package":"ex/a","Test":"TestB/sub","Elapsed":0}',
      '{"Action":"skip","Package":"ex/a","Test":"TestC","Elapsed":0}',
      '{"Action":"fail","Package":"ex/a","Elapsed":0.1}',
      '{"Action":"fail","Package":"ex/broken","Elapsed":0}',
    ].join('\n');
    const run = parseTestRun(evidence({ output: out }));
    expect(run.source).toBe('go-json');
    expect(statuses(run.tests)).toEqual({
      'ex/a/TestA': 'passed',
      'ex/a/TestB/sub': 'failed',
      'ex/a/TestC': 'skipped',
      'ex/broken': 'error',
    });
  });
});

describe('parseTestRun', () => {
  it('prefers reports over the log', () => {
    const xml = '<testsuite><testcase classname="m" name="t"/></testsuite>';
    const run = parseTestRun(evidence({ reports: [{ path: 'r.xml', text: xml }], output: recorded('pytest-rA.txt') }));
    expect(run.source).toBe('junit');
    expect(run.tests).toEqual([{ id: 'm::t', status: 'passed' }]);
  });

  it('falls back to exit_code when nothing per-test can be read', () => {
    const run = parseTestRun(evidence({ output: 'OK\n', exitCode: 0, reports: [{ path: 'r.txt', text: 'hello' }] }));
    expect(run).toEqual({ source: 'exit_code', tests: [], notes: ['report r.txt: no test results in it'] });
  });

  it('notes the v5 rule: a non-zero exit with no failing test parsed', () => {
    const run = parseTestRun(evidence({ output: 'PASSED tests/a.py::test_x\n', exitCode: 2 }));
    expect(run.notes).toEqual(['exited 2 with no failing test parsed: the command counts as failing']);
    expect(parseTestRun(evidence({ output: 'PASSED tests/a.py::test_x\n', exitCode: 0 })).notes).toEqual([]);
  });

  it('caps the test count, clips ids and messages, and keeps the worst status of a repeated id', () => {
    const many = Array.from({ length: MAX_TESTS_PER_COMMAND + 5 }, (_, i) => `PASSED t.py::test_${i}`).join('\n');
    const run = parseTestRun(evidence({ output: many, exitCode: 0 }));
    expect(run.tests).toHaveLength(MAX_TESTS_PER_COMMAND);
    expect(run.notes[0]).toMatch(/more than 20000 tests/);
    const long = `PASSED t.py::test_${'x'.repeat(1000)}\nFAILED t.py::test_${'x'.repeat(1000)} - ${'m'.repeat(5000)}`;
    const [one] = parseTestRun(evidence({ output: long })).tests;
    expect(one.id).toHaveLength(MAX_TEST_ID_CHARS);
    expect(one.message).toHaveLength(MAX_MESSAGE_CHARS);
    expect(one.status).toBe('failed');
  });
});
