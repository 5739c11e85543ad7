import type { Classified, JoinedTest } from './compareTests.js';
import type { GradeInput } from './gradeInput.js';
import type { VerifyCommandRun, VerifySide } from './types.js';

export interface CommandState {
  command: string;
  base?: VerifyCommandRun;
  patched: VerifyCommandRun;
  passes: boolean;
}

const NAMED = 2;

function ranOk(run: VerifyCommandRun): boolean {
  return run.notRun === undefined && !run.timedOut && run.exitCode === 0;
}

export function describeRun(run: VerifyCommandRun): string {
  if (run.notRun !== undefined) return `\`${run.command}\` did not run (${run.notRun})`;
  if (run.timedOut) return `\`${run.command}\` timed out`;
  return `\`${run.command}\` exited ${run.exitCode ?? 'without a code'}`;
}

/**
 * Why the comparison cannot be made, if it cannot: nothing to run, a side not measured, the base's own set-up
 * failing, or a patched test command that did not run although the patched set-up passed (the budget ran out).
 * A patched set-up that fails where the base's passed is the patch's doing: that is a failure, not this.
 */
export function sideProblem(base: VerifySide, patched: VerifySide): string | undefined {
  if (base.tests.length === 0 && patched.tests.length === 0) return 'nothing to verify: no test commands';
  if (base.notRun !== undefined) return `not verified: the base could not be measured (${base.notRun})`;
  if (patched.notRun !== undefined) return `not verified: the patch could not be measured (${patched.notRun})`;
  const baseSetup = base.setup.find((r) => !ranOk(r));
  if (baseSetup) return `not verified: set-up fails on the base, ${describeRun(baseSetup)}`;
  const baseTest = base.tests.find((r) => r.notRun !== undefined);
  if (baseTest) return `not verified on the base: ${describeRun(baseTest)}`;
  const patchedSetupOk = patched.setup.every(ranOk);
  const patchedTest = patched.tests.find((r) => r.notRun !== undefined);
  if (patchedSetupOk && patchedTest) return `not verified on the patch: ${describeRun(patchedTest)}`;
  return undefined;
}

function names(tests: JoinedTest[]): string {
  const shown = tests.slice(0, NAMED).map((t) => t.id);
  const more = tests.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function removedPart(removed: JoinedTest[]): string | undefined {
  if (removed.length === 0) return undefined;
  const skipped = removed.every((t) => t.patched === 'skipped');
  const verb = skipped ? 'skips' : removed.every((t) => t.patched === 'absent') ? 'removes' : 'removes or skips';
  return `the patch ${verb} the failing ${removed.length === 1 ? 'test' : 'tests'} ${names(removed)} instead of fixing`;
}

function failingCommandPart(commands: CommandState[], c: Classified): string | undefined {
  const failing = commands.filter((s) => !s.passes);
  if (failing.length === 0) return undefined;
  const noTest = failing.filter((s) => !s.patched.tests.some((t) => t.status === 'failed' || t.status === 'error'));
  if (noTest.length === 0 && (c.regressions.length > 0 || c.stillFailing.length > 0)) return undefined;
  return `${describeRun((noTest[0] ?? failing[0]).patched)} on the patch`;
}

function setupPart(i: GradeInput): string | undefined {
  const failed = i.patched.setup.find((r) => !ranOk(r));
  return failed ? `set-up fails on the patch: ${describeRun(failed)}` : undefined;
}

export interface HeadlineInput {
  input: GradeInput;
  classified: Classified;
  commands: CommandState[];
  exitCodesOnly: boolean;
}

function exitCodesHeadline(h: HeadlineInput): string {
  const failing = h.commands.find((s) => !s.passes);
  if (!failing) return 'tests pass (exit codes only: no per-test report)';
  return `tests fail: ${describeRun(failing.patched)} (exit codes only: no per-test report)`;
}

function testParts(c: Classified): string[] {
  const parts: string[] = [];
  if (c.regressions.length > 0) parts.push(`${count(c.regressions.length, 'regression')}: ${names(c.regressions)}`);
  const removed = removedPart(c.failingRemoved);
  if (removed) parts.push(removed);
  if (c.fixed.length > 0) parts.push(`${count(c.fixed.length, 'test')} fixed`);
  else if (!removed) parts.push('no test fixed');
  if (c.regressions.length === 0) parts.push('no regressions');
  if (c.stillFailing.length > 0) parts.push(`${count(c.stillFailing.length, 'test')} still failing`);
  return parts;
}

/** One line a reviewer reads first; the most important fact leads. */
export function headlineFor(h: HeadlineInput): string {
  const problem = sideProblem(h.input.base, h.input.patched);
  if (problem !== undefined) return problem;
  const setup = setupPart(h.input);
  const parts = setup ? [setup] : h.exitCodesOnly ? [exitCodesHeadline(h)] : [testParts(h.classified).join(', ')];
  const command = setup || h.exitCodesOnly ? undefined : failingCommandPart(h.commands, h.classified);
  if (command) parts.push(command);
  const failing = h.input.findings.filter((f) => f.kind === 'secret' || f.severity === 'high');
  if (failing.length > 0) parts.push(count(failing.length, 'blocking finding'));
  const others = h.input.findings.length - failing.length;
  if (others > 0) parts.push(count(others, 'other finding'));
  return parts.join('; ');
}
