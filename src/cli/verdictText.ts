import type { Finding, TestChange, Verdict, VerifyCommandRun, VerifySide } from '../verify/types.js';
import { formatDuration, oneLine } from './format.js';

/** Names per list; verification.json has them all. */
const LIST_CAP = 20;

/**
 * One line of verdict text, safe on a terminal: test names, messages and commands come from repository code and
 * model-written files, so control characters (escape sequences) and bidirectional overrides are blanked out.
 */
export function safeLine(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  return oneLine(text.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, ' '), max);
}

const ICON = { success: '✓', failure: '✗', neutral: '–' } as const;

function exitOf(r: VerifyCommandRun | undefined, side: VerifySide): string {
  if (!r) return side.notRun !== undefined ? 'not run' : '—';
  if (r.notRun !== undefined) return 'not run';
  if (r.timedOut) return 'timed out';
  return `exit ${r.exitCode ?? 'killed'}`;
}

function where(c: { file?: string; line?: number }): string {
  return c.file ? `  (${safeLine(c.line ? `${c.file}:${c.line}` : c.file)})` : '';
}

function changeLines(title: string, changes: TestChange[], showStatus: boolean): string[] {
  if (changes.length === 0) return [];
  const out = [`  ${title} (${changes.length}):`];
  for (const c of changes.slice(0, LIST_CAP)) {
    const status = showStatus && c.base && c.patched ? `: ${c.base} → ${c.patched}` : '';
    const message = c.message ? ` — ${safeLine(c.message, 160)}` : '';
    out.push(`    ${safeLine(c.id)}${status}${where(c)}${message}`);
  }
  if (changes.length > LIST_CAP) out.push(`    … and ${changes.length - LIST_CAP} more (verification.json)`);
  return out;
}

function findingLines(findings: Finding[]): string[] {
  if (findings.length === 0) return [];
  const out = [`  Findings on added lines (${findings.length}):`];
  for (const f of findings.slice(0, LIST_CAP))
    out.push(
      `    ${safeLine(`${f.file}:${f.line}`)}:${safeLine(f.rule, 100)}  ${f.severity} ${f.kind} (${safeLine(f.tool, 50)}): ${safeLine(f.message, 160)}`,
    );
  if (findings.length > LIST_CAP) out.push(`    … and ${findings.length - LIST_CAP} more (verification.json)`);
  return out;
}

/** Per command, set-up and tests: exit code on the base → on the patch. */
function commandLines(v: Verdict): string[] {
  const out = ['  Commands (base → patched):'];
  for (const kind of ['setup', 'tests'] as const) {
    const rows = Math.max(v.base[kind].length, v.patched[kind].length);
    for (let i = 0; i < rows; i++) {
      const b = v.base[kind][i];
      const p = v.patched[kind][i];
      const label = kind === 'setup' ? 'setup' : 'test ';
      const cached = kind === 'tests' && v.base.cached ? ' (base cached)' : '';
      out.push(
        `    ${label}  ${exitOf(b, v.base)} → ${exitOf(p, v.patched)}  ${safeLine((p ?? b)!.command, 120)}${cached}`,
      );
    }
  }
  return out.length > 1 ? out : [];
}

function scanLine(v: Verdict): string[] {
  if (v.scans.length === 0) return [];
  const scans = v.scans.map((s) =>
    s.ran ? `${safeLine(s.tool, 50)} ran` : `${safeLine(s.tool, 50)} not run (${safeLine(s.reason ?? '?', 120)})`,
  );
  return [`  Scans: ${scans.join('; ')}`];
}

/** What `verify` prints and `solve` prints after its run: the verdict, from verification.json's content only. */
export function verdictText(v: Verdict): string[] {
  const out = [
    `Verification: ${ICON[v.conclusion]} ${v.conclusion}: ${safeLine(v.headline, 300)}`,
    `  base ${v.base.commit.slice(0, 12)} and base + patch, each in a fresh sandbox, in ${formatDuration(v.durationMs)}`,
  ];
  if (v.base.notRun !== undefined) out.push(`  Base not measured: ${safeLine(v.base.notRun, 300)}`);
  if (v.patched.notRun !== undefined) out.push(`  Patch not measured: ${safeLine(v.patched.notRun, 300)}`);
  if (v.exitCodesOnly) out.push('  No per-test results could be read: the exit codes are the verdict.');
  out.push(
    ...changeLines('Fixed', v.fixed, false),
    ...changeLines('Regressions', v.regressions, true),
    ...changeLines('Still failing', v.stillFailing, false),
    ...changeLines('New tests', v.newTests, true),
  );
  for (const f of v.testFiles.filter((t) => t.removedTests.length || t.newlySkipped.length))
    out.push(
      `  Test file ${safeLine(f.file)} (${f.change}): ${f.removedTests.length} removed, ${f.newlySkipped.length} newly skipped`,
    );
  out.push(...findingLines(v.findings), ...scanLine(v), ...commandLines(v));
  return out;
}
