import type { TestCaseResult } from '../types.js';

/**
 * Bounds on what one test command's evidence can produce. The suite is repository code, and on the patched side the
 * model wrote part of it: a report may be huge, deep or hostile, so every parser stops at these.
 */
export const MAX_TESTS_PER_COMMAND = 20_000;
export const MAX_TEST_ID_CHARS = 300;
export const MAX_MESSAGE_CHARS = 500;
export const MAX_XML_DEPTH = 32;
/** The sandbox's working directory (docker and bwrap both mount the workspace here). */
export const SANDBOX_WORKDIR = '/workspace';

const STATUS_RANK: Record<TestCaseResult['status'], number> = { skipped: 0, passed: 1, failed: 2, error: 3 };

/** Clips a test id to MAX_TEST_ID_CHARS, keeping it deterministic (the same input gives the same id on both sides). */
export function clipId(id: string): string {
  const flat = id.replace(/[\r\n\t]+/g, ' ').trim();
  return flat.length <= MAX_TEST_ID_CHARS ? flat : `${flat.slice(0, MAX_TEST_ID_CHARS - 1)}…`;
}

/** A short one-paragraph message: control characters dropped, whitespace folded, clipped. */
export function clipMessage(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  // eslint-disable-next-line no-control-regex
  const flat = text
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (flat === '') return undefined;
  return flat.length <= MAX_MESSAGE_CHARS ? flat : `${flat.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

/** A repository-relative path from what a report says (absolute sandbox paths lose the workdir; others are kept). */
export function repoRelative(path: string | undefined): string | undefined {
  if (path === undefined || path === '') return undefined;
  let p = path.replace(/\\/g, '/');
  if (p.startsWith(`${SANDBOX_WORKDIR}/`)) p = p.slice(SANDBOX_WORKDIR.length + 1);
  if (p.startsWith('./')) p = p.slice(2);
  if (p.startsWith('/') || p.split('/').includes('..')) return undefined;
  return clipId(p);
}

/**
 * Collects the tests of one command: ids clipped, at most MAX_TESTS_PER_COMMAND, one entry per id (a test reported
 * twice, e.g. by a re-run plugin or by both the verbose line and the summary, keeps its worst status).
 */
export class TestCollector {
  private readonly byId = new Map<string, TestCaseResult>();
  truncated = false;

  add(test: TestCaseResult): void {
    const id = clipId(test.id);
    if (id === '') return;
    const entry: TestCaseResult = { ...test, id, message: clipMessage(test.message) };
    if (entry.message === undefined) delete entry.message;
    if (entry.file === undefined) delete entry.file;
    if (entry.line === undefined || !Number.isInteger(entry.line) || entry.line <= 0) delete entry.line;
    const seen = this.byId.get(id);
    if (seen) {
      if (STATUS_RANK[entry.status] > STATUS_RANK[seen.status]) this.byId.set(id, { ...seen, ...entry });
      return;
    }
    if (this.byId.size >= MAX_TESTS_PER_COMMAND) {
      this.truncated = true;
      return;
    }
    this.byId.set(id, entry);
  }

  get size(): number {
    return this.byId.size;
  }

  results(): TestCaseResult[] {
    return [...this.byId.values()];
  }
}
