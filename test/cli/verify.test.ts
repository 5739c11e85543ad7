import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Verdict } from '../../src/verify/types.js';
import { makeRepo, runFrognano, snapshotTree, tempDir, writeJson, solveOnBwrap } from './helpers.js';
import { CALC, TESTS } from '../support/calcRepo.js';

// The real CLI as a subprocess, on real git repositories, in the bwrap sandbox (unittest: the host's
// /usr/bin/python3, which bwrap shows the sandbox, has no pytest here).
jest.setTimeout(120_000);

const UNITTEST = 'python3 -m unittest -v';
const ADD = 'test_calc.TestCalc.test_add';
const SUB = 'test_calc.TestCalc.test_sub';

/** A `git diff` of calc.py with `edit` applied to it, taken in a scratch clone so the repository stays as it is. */
async function patchOf(repo: string, edit: (calc: string) => string): Promise<string> {
  const scratch = path.join(work, `scratch-${Math.random().toString(36).slice(2)}`);
  execFileSync('git', ['clone', '-q', repo, scratch]);
  await fs.writeFile(path.join(scratch, 'calc.py'), edit(CALC));
  const patch = execFileSync('git', ['diff'], { cwd: scratch }).toString();
  await fs.rm(scratch, { recursive: true, force: true });
  return patch;
}

let work: string;
let repo: string;
let fixPatch: string;
let breakPatch: string;

beforeAll(async () => {
  work = await tempDir('verify');
  // The test command comes from the repository's config, as the runner would take it.
  repo = await makeRepo(path.join(work, 'repo'), {
    'calc.py': CALC,
    'test_calc.py': TESTS,
    '.github/frognano.yml': `testCommands:\n  - ${UNITTEST}\n`,
  });
  fixPatch = path.join(work, 'fix.patch');
  await fs.writeFile(fixPatch, await patchOf(repo, (c) => c.replace('return a - b', 'return a + b')));
  breakPatch = path.join(work, 'break.patch');
  await fs.writeFile(breakPatch, await patchOf(repo, (c) => c.replaceAll('return a - b', 'return a + b')));
});

afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

async function verdictIn(dir: string): Promise<Verdict> {
  return JSON.parse(await fs.readFile(path.join(dir, 'verification.json'), 'utf8')) as Verdict;
}

describe('frognano verify', () => {
  test('a patch that fixes the failing test: success, exit 0, the fixed test named; tests from frognano.yml', async () => {
    const before = await snapshotTree(repo);
    const out = path.join(work, 'out-fix');
    const r = await runFrognano(['verify', repo, fixPatch, '--sandbox', 'bwrap', '--out', out]);
    expect(r.stderr).not.toMatch(/unexpected error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Verification: ✓ success: 1 test fixed, no regressions$/m);
    expect(r.stdout).toMatch(new RegExp(`Fixed \\(1\\):\\n\\s+${ADD.replace(/\./g, '\\.')}\\n`));
    expect(r.stdout).not.toContain('Regressions');
    expect(r.stdout).toMatch(new RegExp(`test +exit 1 → exit 0 +${UNITTEST}`));
    const v = await verdictIn(out);
    expect(v.conclusion).toBe('success');
    expect(v.fixed.map((c) => c.id)).toEqual([ADD]);
    expect(v.base.tests[0].source).toBe('unittest-log');
    expect(v.base.commit).toBe(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo }).toString().trim());
    expect(await snapshotTree(repo)).toEqual(before);
  });

  test('a patch that fixes one test and breaks another: failure, exit 5, the regression named', async () => {
    const out = path.join(work, 'out-break');
    const r = await runFrognano(['verify', repo, breakPatch, '--test', UNITTEST, '--sandbox', 'bwrap', '--out', out]);
    expect(r.code).toBe(5);
    expect(r.stdout).toMatch(/^Verification: ✗ failure: 1 regression: test_calc\.TestCalc\.test_sub, 1 test fixed$/m);
    expect(r.stdout).toContain(`Regressions (1):\n    ${SUB}: passed → failed`);
    const v = await verdictIn(out);
    expect(v.conclusion).toBe('failure');
    expect(v.regressions.map((c) => c.id)).toEqual([SUB]);
    expect(v.fixed.map((c) => c.id)).toEqual([ADD]);
  });

  test('--json prints the verdict; a patch that does not apply exits 3; no test commands is a usage error', async () => {
    const other = await makeRepo(path.join(work, 'other'), { 'calc.py': 'x = 1\n', 'test_calc.py': TESTS });
    const out = path.join(work, 'out-json');
    const r = await runFrognano([
      'verify',
      other,
      fixPatch,
      '--test',
      UNITTEST,
      '--sandbox',
      'bwrap',
      '--out',
      out,
      '--json',
    ]);
    expect(r.code).toBe(3);
    const summary = JSON.parse(r.stdout);
    expect(summary.exitCode).toBe(3);
    expect(summary.verdict.patched.notRun).toMatch(/the patch does not apply/);
    expect(summary.verificationPath).toBe(path.join(out, 'verification.json'));

    const none = await runFrognano(['verify', other, fixPatch, '--sandbox', 'bwrap', '--out', out]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('verify needs test commands');
  });
});

describe('frognano solve verifies its patch', () => {
  test('the verdict is printed after the run as the result and written as verification.json', async () => {
    const script = await writeJson(path.join(work, 'fix.json'), {
      turns: [
        {
          content: '',
          tool_calls: [
            {
              name: 'Edit',
              arguments: {
                file_path: 'calc.py',
                old_string: 'return a - b\n\n\ndef sub',
                new_string: 'return a + b\n\n\ndef sub',
              },
            },
          ],
        },
        { content: 'add() now adds.' },
      ],
    });
    const out = path.join(work, 'out-solve');
    const r = await solveOnBwrap(repo, 'add() subtracts', script, out);
    expect(r.stderr).not.toMatch(/unexpected error/);
    expect(r.code).toBe(0);
    // Without --test the commands come from frognano.yml; the model's workspace run is labelled as what it saw.
    expect(r.stdout).toContain("Tests in the model's workspace (what the model saw, not the result):");
    expect(r.stdout).not.toMatch(/^Tests:/m);
    expect(r.stdout).toMatch(/^Verification: ✓ success: 1 test fixed, no regressions$/m);
    expect(r.stdout).toContain(`verdict     ${path.join(out, 'verification.json')}`);
    const v = await verdictIn(out);
    expect(v.fixed.map((c) => c.id)).toEqual([ADD]);
    expect(v.conclusion).toBe('success');

    const off = path.join(work, 'out-no-verify');
    const r2 = await solveOnBwrap(repo, 'add() subtracts', script, off, '--no-verify', '--json');
    expect(r2.code).toBe(0);
    expect(JSON.parse(r2.stdout).verification).toEqual({ state: 'off', reason: 'turned off with --no-verify' });
    await expect(fs.stat(path.join(off, 'verification.json'))).rejects.toThrow(/ENOENT/);
  });
});
