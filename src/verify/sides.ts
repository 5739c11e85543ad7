import { touchesKeyFile } from '../leaf/setUp.js';
import type { Sandbox } from '../sandbox/types.js';
import { MAX_PATCH_FILES, patchFiles } from './diffFiles.js';
import { runTestCommand } from './runTests.js';
import type { VerifyCommandRun, VerifyOptions, VerifySide } from './types.js';
import { prepareSide, SideNotRun } from './workspaces.js';

/** What one side runs: the base, base + patch, or base + patch with the base's test files put back. */
export interface SidePlan {
  label: string;
  patch?: string;
  /** Run in the side's sandbox after the patch and before the set-up (restoring the base's test files). */
  afterPatch?: (sandbox: Sandbox, signal: AbortSignal) => Promise<string | undefined>;
}

function notRunCommand(command: string, reason: string): VerifyCommandRun {
  return {
    command,
    exitCode: null,
    timedOut: false,
    durationMs: 0,
    outputTail: '',
    tests: [],
    source: 'exit_code',
    notRun: reason,
  };
}

export const BUDGET_SPENT = 'the verification time budget ran out before this command';

async function runTests(sandbox: Sandbox, o: VerifyOptions, signal: AbortSignal): Promise<VerifyCommandRun[]> {
  const out: VerifyCommandRun[] = [];
  for (const command of o.testCommands) {
    if (signal.aborted) {
      out.push(notRunCommand(command, BUDGET_SPENT));
      continue;
    }
    const run = await runTestCommand(sandbox, command, {
      timeoutMs: o.testTimeoutMs,
      reportGlobs: o.reportGlobs,
      signal,
    });
    if (run.notRun === 'cancelled' && signal.aborted)
      run.notRun = 'the verification time budget ran out during this command';
    out.push(run);
  }
  return out;
}

/** The base's set-up snapshot, for a side whose patch touches no key file (a changed lock file sets up anew). */
function snapshotFor(plan: SidePlan, o: VerifyOptions): VerifyOptions['setupSnapshot'] {
  const snap = o.setupSnapshot;
  if (!snap || !plan.patch) return snap;
  const files = patchFiles(plan.patch);
  // A patch past the reading cap may name a key file after it: set up anew.
  if (files.length >= MAX_PATCH_FILES) return undefined;
  const paths = files.flatMap((f) => (f.oldPath ? [f.path, f.oldPath] : [f.path]));
  return touchesKeyFile(paths, snap.keyFiles) ? undefined : snap;
}

/**
 * Measures one side in its own fresh sandbox. Never throws: a side that cannot start (workspace, sandbox, a patch
 * that does not apply) comes back with `notRun` and its reason.
 */
export async function measureSide(plan: SidePlan, o: VerifyOptions, signal: AbortSignal): Promise<VerifySide> {
  const side: VerifySide = { commit: o.baseCommit, setup: [], tests: [] };
  if (signal.aborted) return { ...side, notRun: 'the verification time budget ran out before this side started' };
  o.onProgress?.(`verifying: ${plan.label} set-up`);
  let prepared;
  try {
    prepared = await prepareSide({
      sourceRepo: o.repoDir,
      commit: o.baseCommit,
      patch: plan.patch,
      afterPatch: plan.afterPatch,
      sandboxFactory: o.sandboxFactory,
      setupCommands: o.setupCommands,
      setupNetwork: o.setupNetwork,
      setupTimeoutMs: o.setupTimeoutMs,
      setupSnapshot: snapshotFor(plan, o),
      signal,
    });
  } catch (err) {
    const reason =
      err instanceof SideNotRun ? err.reason : `the ${plan.label} side failed to start (${(err as Error).name})`;
    return { ...side, notRun: signal.aborted ? 'the verification time budget ran out during set-up' : reason };
  }
  try {
    side.setup = prepared.setup;
    if (prepared.setupReused) side.setupReused = true;
    o.onProgress?.(`verifying: ${plan.label} tests`);
    side.tests = await runTests(prepared.sandbox, o, signal);
    return side;
  } catch (err) {
    return { ...side, notRun: `the ${plan.label} side stopped (${(err as Error).name})` };
  } finally {
    await prepared.close();
  }
}
