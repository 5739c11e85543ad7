import type { PatchFile } from './diffFiles.js';
import type { Finding, ScanStatus, VerifySide } from './types.js';

/** What gradeVerdict grades: the measured sides, the patch's files, the task text and the scans. */
export interface GradeInput {
  base: VerifySide;
  patched: VerifySide;
  /** The base's test files run against the patched code (only when the patch touched test files). */
  baseTestsOnPatch?: VerifySide;
  patchFiles: PatchFile[];
  /** The task text: a passing test the patch removes or skips is not a regression when the task names it. */
  task?: string;
  findings: Finding[];
  scans: ScanStatus[];
  durationMs: number;
}
