import type { JoinedTest } from './compareTests.js';
import { isTestFile, type PatchFile } from './diffFiles.js';
import type { TestFileChange } from './types.js';

/** The file a test belongs to: the report's file, else the path a pytest/jest id starts with. */
export function fileOfTest(t: { id: string; file?: string }, candidates: string[]): string | undefined {
  if (t.file) return t.file;
  for (const path of candidates) {
    const dotted = path.replace(/\.[^./]+$/, '').replace(/\//g, '.');
    if (t.id.startsWith(`${path}::`) || t.id.startsWith(`${path} › `) || t.id === path) return path;
    if (t.id.startsWith(`${dotted}.`) || t.id.startsWith(`${dotted}::`)) return path;
  }
  const pytestFile = /^([^:]+\.py)::/.exec(t.id)?.[1];
  if (pytestFile) return pytestFile;
  return t.id.includes(' › ') ? t.id.split(' › ')[0] : undefined;
}

function entry(map: Map<string, TestFileChange>, file: string, change: TestFileChange['change']): TestFileChange {
  let e = map.get(file);
  if (!e) {
    e = { file, change, removedTests: [], newlySkipped: [], changedTests: [] };
    map.set(file, e);
  }
  return e;
}

function touchedTestFiles(patch: PatchFile[], map: Map<string, TestFileChange>): void {
  for (const f of patch) {
    if (f.change === 'renamed') {
      if (f.oldPath && isTestFile(f.oldPath)) entry(map, f.oldPath, 'deleted');
      if (isTestFile(f.path)) entry(map, f.path, 'added');
    } else if (isTestFile(f.path)) entry(map, f.path, f.change);
  }
}

/**
 * Test files the patch touched, each with the tests it removed, skipped or changed; tests gone or skipped from a file
 * the patch did not touch are listed under that file as `unchanged` (something else the patch changed did it).
 */
export function testFileChanges(patch: PatchFile[], tests: JoinedTest[]): TestFileChange[] {
  const map = new Map<string, TestFileChange>();
  touchedTestFiles(patch, map);
  const candidates = [...map.keys(), ...patch.map((f) => f.oldPath ?? f.path)];
  for (const t of tests) {
    const removed = t.base !== 'absent' && t.patched === 'absent';
    const skipped = t.base !== 'absent' && t.base !== 'skipped' && t.patched === 'skipped';
    const changed = t.baseTestsOnPatch !== undefined && t.baseTestsOnPatch !== t.patched && t.patched !== 'absent';
    if (!removed && !skipped && !changed) continue;
    const file = fileOfTest(t, candidates) ?? '(unknown file)';
    const e = entry(map, file, 'unchanged');
    if (removed) e.removedTests.push(t.id);
    if (skipped) e.newlySkipped.push(t.id);
    if (changed) e.changedTests.push(t.id);
  }
  return [...map.values()];
}
