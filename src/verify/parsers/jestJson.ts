import { z } from 'zod';
import type { TestCaseResult } from '../types.js';
import { repoRelative, type TestCollector } from './limits.js';

/**
 * jest's `--json` result (a report file from `--outputFile`, or the JSON line jest prints on stdout). The id is
 * `file › ancestor › title`, file repository-relative. A suite that failed to run (syntax error, import error) has no
 * assertion results: it becomes one `error` entry named after the file, so a broken test file is never silent.
 */
const Assertion = z.object({
  ancestorTitles: z.array(z.string()).default([]),
  title: z.string(),
  status: z.string(),
  failureMessages: z.array(z.string()).nullish(),
  location: z.object({ line: z.number(), column: z.number().nullish() }).nullish(),
});
const Suite = z.object({
  name: z.string(),
  status: z.string().optional(),
  message: z.string().optional(),
  assertionResults: z.array(z.unknown()).default([]),
});
const Report = z.object({ testResults: z.array(z.unknown()) });

function statusOf(status: string): TestCaseResult['status'] | undefined {
  if (status === 'passed') return 'passed';
  if (status === 'failed') return 'failed';
  if (['pending', 'skipped', 'todo', 'disabled', 'focused'].includes(status)) return 'skipped';
  return undefined;
}

function addSuite(raw: unknown, into: TestCollector): void {
  const suite = Suite.safeParse(raw);
  if (!suite.success) return;
  const file = repoRelative(suite.data.name) ?? suite.data.name;
  if (suite.data.assertionResults.length === 0 && suite.data.status === 'failed') {
    into.add({ id: file, status: 'error', file, message: suite.data.message });
    return;
  }
  for (const a of suite.data.assertionResults) {
    const t = Assertion.safeParse(a);
    const status = t.success ? statusOf(t.data.status) : undefined;
    if (!t.success || !status) continue;
    const id = [file, ...t.data.ancestorTitles, t.data.title].join(' › ');
    into.add({ id, status, file, line: t.data.location?.line, message: t.data.failureMessages?.[0] });
  }
}

/** Parses a jest JSON document; returns false when the text is not one. */
export function parseJestJson(text: string, into: TestCollector): boolean {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return false;
  }
  const report = Report.safeParse(data);
  if (!report.success) return false;
  for (const suite of report.data.testResults) addSuite(suite, into);
  return true;
}

/** The JSON line jest writes to stdout under `--json` (without `--outputFile`), if the output holds one. */
export function jestJsonInOutput(output: string): string | undefined {
  for (const line of output.split('\n')) {
    const t = line.trim();
    if (t.startsWith('{') && t.includes('"testResults"') && t.includes('"numTotalTests"')) return t;
  }
  return undefined;
}
