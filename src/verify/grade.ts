import { classify, joinTests, toChange, type Classified } from './compareTests.js';
import type { GradeInput } from './gradeInput.js';
import { headlineFor, sideProblem, type CommandState } from './headline.js';
import { testFileChanges } from './testFiles.js';
import type { Finding, Verdict, VerifyCommandRun, VerifyConclusion } from './types.js';

export type { GradeInput } from './gradeInput.js';

/** A test command passes when it ran to exit code 0 and no test it reported failed or errored (SWE-bench v5). */
export function commandPasses(run: VerifyCommandRun | undefined): boolean {
  if (!run || run.notRun !== undefined || run.timedOut || run.exitCode !== 0) return false;
  return !run.tests.some((t) => t.status === 'failed' || t.status === 'error');
}

/** A finding fails the verdict when it is a secret (any severity) or a high-severity security finding. */
export function findingFails(f: Finding): boolean {
  return f.kind === 'secret' || f.severity === 'high';
}

const WORD = /\w+/g;

/**
 * Whether the task text names a test: its full id, or its last name part (`test_b` of `tests/a.py::test_b[1]`, the
 * title of a jest test) as a whole word. Names shorter than 5 characters (`test`) never match (too easy to hit by chance).
 */
export function taskNames(task: string | undefined): (id: string) => boolean {
  if (!task) return () => false;
  const words = new Set(task.match(WORD) ?? []);
  return (id) => {
    if (task.includes(id)) return true;
    const last = id.split(/::| › |\//).pop() ?? id;
    const bare =
      last
        .replace(/\[.*\]$/, '')
        .split('.')
        .pop() ?? last;
    return bare.length >= 5 && (words.has(bare) || (last.includes(' ') && task.includes(last)));
  };
}

function commandStates(i: GradeInput): CommandState[] {
  return i.patched.tests.map((run, index) => ({
    command: run.command,
    base: i.base.tests[index],
    patched: run,
    passes: commandPasses(run),
  }));
}

function conclusionOf(i: GradeInput, c: Classified, commands: CommandState[]): VerifyConclusion {
  if (sideProblem(i.base, i.patched) !== undefined) return 'neutral';
  if (c.regressions.length > 0 || c.failingRemoved.length > 0) return 'failure';
  if (commands.some((s) => !s.passes) || i.findings.some(findingFails)) return 'failure';
  return 'success';
}

/** The verdict from the measured sides (pure: the same input always gives the same verdict). */
export function gradeVerdict(i: GradeInput): Verdict {
  const measurable = sideProblem(i.base, i.patched) === undefined;
  const joined = measurable ? joinTests(i.base, i.patched, i.baseTestsOnPatch) : [];
  const c = classify(joined, taskNames(i.task));
  const commands = commandStates(i);
  const runs = [...i.base.tests, ...i.patched.tests];
  const exitCodesOnly = runs.length > 0 && runs.every((r) => r.source === 'exit_code');
  const testFiles = testFileChanges(i.patchFiles, joined);
  const verdict: Verdict = {
    conclusion: conclusionOf(i, c, commands),
    headline: headlineFor({ input: i, classified: c, commands, exitCodesOnly }),
    base: i.base,
    patched: i.patched,
    fixed: c.fixed.map(toChange),
    regressions: c.regressions.map(toChange),
    stillFailing: [...c.stillFailing, ...c.failingRemoved].map(toChange),
    newTests: c.newTests.map(toChange),
    testFiles,
    findings: i.findings,
    scans: i.scans,
    exitCodesOnly,
    durationMs: i.durationMs,
  };
  if (i.baseTestsOnPatch) verdict.baseTestsOnPatch = i.baseTestsOnPatch;
  return verdict;
}
