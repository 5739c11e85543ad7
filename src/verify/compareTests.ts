import type { TestCaseResult, TestChange, VerifyCommandRun, VerifySide } from './types.js';

type Status = TestCaseResult['status'] | 'absent';

/** One test joined across the sides: command index + id is the key. */
export interface JoinedTest {
  id: string;
  command: string;
  base: Status;
  patched: Status;
  baseTestsOnPatch?: Status;
  file?: string;
  line?: number;
  message?: string;
}

const bad = (s: Status | undefined): boolean => s === 'failed' || s === 'error';
const gone = (s: Status | undefined): boolean => s === 'absent' || s === 'skipped';

function byId(run: VerifyCommandRun | undefined): Map<string, TestCaseResult> {
  return new Map((run?.tests ?? []).map((t) => [t.id, t]));
}

function joinCommand(index: number, sides: { base: VerifySide; patched: VerifySide; btp?: VerifySide }): JoinedTest[] {
  const command = sides.patched.tests[index]?.command ?? sides.base.tests[index]?.command ?? '';
  const base = byId(sides.base.tests[index]);
  const patched = byId(sides.patched.tests[index]);
  const btp = sides.btp ? byId(sides.btp.tests[index]) : undefined;
  const ids = new Set([...base.keys(), ...patched.keys()]);
  const joined: JoinedTest[] = [];
  for (const id of ids) {
    const b = base.get(id);
    const p = patched.get(id);
    const where = p ?? b;
    joined.push({
      id,
      command,
      base: b?.status ?? 'absent',
      patched: p?.status ?? 'absent',
      baseTestsOnPatch: btp && b ? (btp.get(id)?.status ?? 'absent') : undefined,
      file: where?.file ?? b?.file,
      line: where?.line ?? b?.line,
      message: p?.message ?? (btp && b ? btp.get(id)?.message : undefined),
    });
  }
  return joined;
}

/** Every test of every test command, joined across base, patched and (when it ran) base tests on the patch. */
export function joinTests(base: VerifySide, patched: VerifySide, btp?: VerifySide): JoinedTest[] {
  const count = Math.max(base.tests.length, patched.tests.length);
  const all: JoinedTest[] = [];
  for (let i = 0; i < count; i++) all.push(...joinCommand(i, { base, patched, btp }));
  return all;
}

export function toChange(t: JoinedTest): TestChange {
  const change: TestChange = { id: t.id, command: t.command, base: t.base, patched: t.patched };
  if (t.baseTestsOnPatch !== undefined) change.baseTestsOnPatch = t.baseTestsOnPatch;
  if (t.file !== undefined) change.file = t.file;
  if (t.line !== undefined) change.line = t.line;
  if (t.message !== undefined) change.message = t.message;
  return change;
}

export interface Classified {
  fixed: JoinedTest[];
  regressions: JoinedTest[];
  stillFailing: JoinedTest[];
  newTests: JoinedTest[];
  /** Failing on base, gone or skipped on the patch: never "fixed". */
  failingRemoved: JoinedTest[];
  /** Gone or skipped on the patch and named by the task: neither a regression nor a removed failing test. */
  removedAsAsked: JoinedTest[];
}

/**
 * The rules (docs/verification.md "What is measured and the rules"). With base tests on the patch measured, the
 * base's version of a test is the judge of the code: a patch that edits a test into passing fixes nothing, and a
 * test the base's version fails on the patched code is a regression even if the patch's version passes.
 */
export function classify(tests: JoinedTest[], namedByTask: (id: string) => boolean): Classified {
  const c: Classified = {
    fixed: [],
    regressions: [],
    stillFailing: [],
    newTests: [],
    failingRemoved: [],
    removedAsAsked: [],
  };
  for (const t of tests) {
    const btp = t.baseTestsOnPatch;
    if (t.base === 'absent') {
      if (t.patched !== 'absent') c.newTests.push(t);
    } else if (t.base === 'passed') {
      if (bad(t.patched) || bad(btp)) c.regressions.push(t);
      else if (gone(t.patched)) (namedByTask(t.id) ? c.removedAsAsked : c.regressions).push(t);
    } else if (bad(t.base)) {
      if (gone(t.patched)) (namedByTask(t.id) ? c.removedAsAsked : c.failingRemoved).push(t);
      else if (t.patched === 'passed' && !bad(btp)) c.fixed.push(t);
      else c.stillFailing.push(t);
    }
  }
  return c;
}
