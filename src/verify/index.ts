import { restoreBaseTests, touchedTestFiles } from './baseTests.js';
import { baseCacheKey } from './cacheKey.js';
import { patchFiles } from './diffFiles.js';
import { gradeVerdict } from './grade.js';
import { scanChange, type ScanResult } from './scans/index.js';
import { measureSide } from './sides.js';
import type { Verdict, VerifyOptions, VerifySide } from './types.js';

export { baseCacheKey, VERIFIER_VERSION } from './cacheKey.js';
export { RedisBaseResultCache, FileBaseResultCache } from './cache.js';
export { prepareSide, createSideWorkspace, applyPatchInSandbox, SideNotRun } from './workspaces.js';
export type * from './types.js';

/** A side worth caching: measured to the end, no command killed. */
function cacheable(side: VerifySide): boolean {
  return !side.notRun && [...side.setup, ...side.tests].every((r) => !r.timedOut && r.notRun === undefined);
}

async function baseSide(o: VerifyOptions, signal: AbortSignal): Promise<VerifySide> {
  const key = baseCacheKey(o);
  const hit = await o.cache?.get(key).catch(() => undefined);
  if (hit && hit.commit === o.baseCommit) return { ...hit, cached: true };
  const side = await measureSide({ label: 'base' }, o, signal);
  if (o.cache && cacheable(side)) await o.cache.set(key, side).catch(() => undefined);
  return side;
}

/** Runs tasks with at most `limit` at once, in order of the list. */
async function limited<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
  return results;
}

/**
 * The verdict on a change (docs/verification.md): fresh sandboxes on the base commit and on base + patch (and, when
 * the patch touches test files, the patched code with the base's test files), each with the set-up then the test
 * commands in the clean shell, graded by gradeVerdict. One overall timeout (timeoutMs) bounds everything; a side
 * that cannot run is `notRun` with its reason, so this never throws for what a side did.
 */
export async function verifyChange(o: VerifyOptions): Promise<Verdict> {
  const started = Date.now();
  const signal = AbortSignal.any([AbortSignal.timeout(o.timeoutMs), ...(o.signal ? [o.signal] : [])]);
  const files = patchFiles(o.patch);
  const tests = touchedTestFiles(files);
  const third = o.testCommands.length > 0 && tests.restore.length + tests.remove.length > 0;
  const tasks: (() => Promise<VerifySide>)[] = [
    () => baseSide(o, signal),
    () => measureSide({ label: 'patched', patch: o.patch }, o, signal),
  ];
  if (third) {
    const afterPatch = restoreBaseTests(o.baseCommit, tests);
    tasks.push(() => measureSide({ label: 'base tests on the patch', patch: o.patch, afterPatch }, o, signal));
  }
  // The scans open a sandbox of their own beside the sides: a small job (bandit on the patch's files) that should
  // not wait for the test suites.
  const [[base, patched, baseTestsOnPatch], scanned] = await Promise.all([
    limited(o.concurrency ?? 2, tasks),
    scans(o, signal, started),
  ]);
  o.onProgress?.('verifying: grading');
  return gradeVerdict({
    base,
    patched,
    baseTestsOnPatch,
    patchFiles: files,
    task: o.task,
    findings: scanned.findings,
    scans: scanned.scans,
    durationMs: Date.now() - started,
  });
}

/** The security and secrets scans of what the patch adds, within what is left of the verification's budget. */
function scans(o: VerifyOptions, signal: AbortSignal, started: number): Promise<ScanResult> {
  return scanChange({
    repoDir: o.repoDir,
    baseCommit: o.baseCommit,
    patch: o.patch,
    sandboxFactory: o.sandboxFactory,
    security: o.security,
    secrets: o.secrets,
    timeoutMs: Math.max(1, o.timeoutMs - (Date.now() - started)),
    signal,
  });
}
