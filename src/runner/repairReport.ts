import { MAX_REPAIR_REPORT_CHARS } from '../queue/verifyRepair.js';
import { tail } from '../leaf/text.js';
import { clip } from '../util/clip.js';
import { commandPasses } from '../verify/grade.js';
import type { Finding, TestChange, Verdict } from '../verify/types.js';

/** Per list, how many entries the model is shown; per failing command, how much of its output's end. */
const MAX_ENTRIES = 20;
const OUTPUT_TAIL_CHARS = 3_000;

function testLine(t: TestChange): string {
  const where = t.file ? ` (${t.file}${t.line ? `:${t.line}` : ''})` : '';
  const was = `${t.base ?? 'absent'} → ${t.patched ?? 'absent'}`;
  const why = t.message ? `: ${clip(t.message.replace(/\s+/g, ' '), 300)}` : '';
  return `- ${t.id}${where}, ${was}${why}`;
}

function findingLine(f: Finding): string {
  return `- ${f.file}:${f.line}: ${f.tool} ${f.rule} (${f.severity}): ${clip(f.message, 300)}`;
}

function list<T>(title: string, items: T[], line: (t: T) => string): string[] {
  if (items.length === 0) return [];
  const more = items.length > MAX_ENTRIES ? [`- and ${items.length - MAX_ENTRIES} more`] : [];
  return [`${title}:`, ...items.slice(0, MAX_ENTRIES).map(line), ...more, ''];
}

/** The failing test commands on the patched side, each with the end of its output. */
function failingCommands(v: Verdict): string[] {
  const out: string[] = [];
  for (const run of v.patched.tests.filter((r) => !commandPasses(r)).slice(0, 5)) {
    const status = run.notRun ?? (run.timedOut ? 'timed out' : `exit code ${run.exitCode ?? 'none'}`);
    out.push(
      `\`${run.command}\` (${status}); the end of its output:`,
      '```',
      tail(run.outputTail, OUTPUT_TAIL_CHARS),
      '```',
      '',
    );
  }
  return out;
}

function testFileLines(v: Verdict): string[] {
  return v.testFiles
    .filter((f) => f.removedTests.length || f.newlySkipped.length)
    .slice(0, MAX_ENTRIES)
    .map((f) => {
      const gone = f.removedTests.length ? `removes ${f.removedTests.slice(0, 5).join(', ')}` : '';
      const skipped = f.newlySkipped.length ? `skips ${f.newlySkipped.slice(0, 5).join(', ')}` : '';
      return `- ${f.file}: ${[gone, skipped].filter(Boolean).join('; ')}`;
    });
}

/**
 * The task of a verification-repair round: what the bot measured on the change the model published, in fresh
 * sandboxes on the base commit and on base + change. Bounded (MAX_REPAIR_REPORT_CHARS): it travels in the job.
 */
export function repairReport(v: Verdict): string {
  const parts = [
    `The bot verified your change in fresh sandboxes (the set-up and test commands on the base commit and on the base ` +
      `with your change applied) and the result is: ${v.headline}.`,
    'Fix the code so that these pass without breaking other tests. Do not delete, skip or weaken tests to get there.',
    '',
    ...list('Regressions (passed before your change, fail now)', v.regressions, testLine),
    ...list('Still failing', v.stillFailing, testLine),
    ...list('Test files your change edits so that tests are gone or skipped', testFileLines(v), (l) => l),
    ...list('Findings on lines your change adds', v.findings, findingLine),
    ...failingCommands(v),
  ];
  return clip(parts.join('\n').trim(), MAX_REPAIR_REPORT_CHARS);
}
