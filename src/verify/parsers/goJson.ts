import { z } from 'zod';
import type { TestCaseResult } from '../types.js';
import type { TestCollector } from './limits.js';

/**
 * `go test -json` events, one JSON object a line: the final `pass`/`fail`/`skip` action of each (package, test)
 * is its result; the id is `package/TestName` (subtests keep their `TestA/sub` name). A package that failed to
 * build reports `fail` without a test: it becomes one `error` entry named after the package.
 */
const Event = z.object({
  Action: z.string(),
  Package: z.string().optional(),
  Test: z.string().optional(),
  Output: z.string().optional(),
});
const STATUS: Record<string, TestCaseResult['status']> = { pass: 'passed', fail: 'failed', skip: 'skipped' };

/** Returns whether the output held go test JSON events with at least one result. */
export function parseGoJson(output: string, into: TestCollector): boolean {
  const pkgHasTests = new Set<string>();
  const failedPkgs: string[] = [];
  let any = false;
  for (const line of output.split('\n')) {
    if (!line.startsWith('{"')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    const e = Event.safeParse(parsed);
    if (!e.success || STATUS[e.data.Action] === undefined) continue;
    const pkg = e.data.Package ?? '';
    if (e.data.Test === undefined) {
      if (e.data.Action === 'fail') failedPkgs.push(pkg);
      continue;
    }
    pkgHasTests.add(pkg);
    into.add({ id: pkg ? `${pkg}/${e.data.Test}` : e.data.Test, status: STATUS[e.data.Action] });
    any = true;
  }
  for (const pkg of failedPkgs) {
    if (pkgHasTests.has(pkg)) continue;
    into.add({ id: pkg, status: 'error', message: 'package failed without running its tests (build failure?)' });
    any = true;
  }
  return any;
}
