import type { TestCaseResult } from '../types.js';
import { repoRelative, TestCollector } from './limits.js';
import { xmlEvents, type XmlEvent } from './xml.js';

/**
 * JUnit XML, the generic testsuite/testcase form written by pytest `--junitxml`, jest-junit, go-junit-report,
 * cargo2junit, surefire …: a testcase with a <failure> failed, with an <error> errored, with a <skipped> was skipped,
 * otherwise passed. The id is `file::classname::name` with the parts the report gives (classname dropped when it
 * repeats the name, as jest-junit writes it), so it is the same on the base and the patched run.
 */
export function testIdOf(attrs: Record<string, string>): string {
  const name = attrs.name ?? '';
  const classname = attrs.classname && attrs.classname !== name ? attrs.classname : undefined;
  return [repoRelative(attrs.file), classname, name].filter((part) => part !== undefined && part !== '').join('::');
}

interface OpenCase {
  result: TestCaseResult;
  /** Inside a failure/error/skipped element: its text is the message when it has no message attribute. */
  collecting: boolean;
  text: string;
}

const OUTCOMES: Record<string, TestCaseResult['status']> = { failure: 'failed', error: 'error', skipped: 'skipped' };
const RANK: Record<TestCaseResult['status'], number> = { passed: 0, skipped: 1, failed: 2, error: 3 };

function openCase(attrs: Record<string, string>): OpenCase {
  const line = attrs.line !== undefined ? Number(attrs.line) : undefined;
  return {
    result: { id: testIdOf(attrs), status: 'passed', file: repoRelative(attrs.file), line },
    collecting: false,
    text: '',
  };
}

function onOutcome(current: OpenCase, status: TestCaseResult['status'], attrs: Record<string, string>): void {
  if (RANK[status] < RANK[current.result.status]) return;
  current.result.status = status;
  current.result.message = attrs.message;
  current.collecting = attrs.message === undefined;
}

/** Reads one JUnit XML document into `into`; returns whether it had any testcase. Throws XmlRefused. */
export function parseJunit(doc: string, into: TestCollector): boolean {
  let current: OpenCase | undefined;
  let any = false;
  const finish = (): void => {
    if (!current) return;
    if (current.text.trim() !== '' && current.result.message === undefined) current.result.message = current.text;
    into.add(current.result);
    current = undefined;
  };
  for (const e of xmlEvents(doc) as Iterable<XmlEvent>) {
    if (e.kind === 'open' && e.name === 'testcase') {
      finish();
      any = true;
      current = openCase(e.attrs);
      if (e.selfClosing) finish();
    } else if (e.kind === 'open' && current && OUTCOMES[e.name] !== undefined) {
      onOutcome(current, OUTCOMES[e.name], e.attrs);
    } else if (e.kind === 'close' && e.name === 'testcase') {
      finish();
    } else if (e.kind === 'close' && current && OUTCOMES[e.name] !== undefined) {
      current.collecting = false;
    } else if (e.kind === 'text' && current?.collecting && current.text.length < 2000) {
      current.text += e.text;
    }
  }
  finish();
  return any;
}
