import { redact } from '../util/redact.js';
import type { VerificationOutcome } from '../verify/outcome.js';
import type { Finding, TestChange, Verdict, VerifyCommandRun } from '../verify/types.js';
import { testsSection, type TestRun } from './pullRequest.js';
import { untrustedBlock, untrustedInline } from './untrusted.js';

/**
 * How a verdict reads where reviewers look: the pull request description's Verification section, the status
 * comment's line, and the `frognano / verification` check run (src/github/verificationCheck.ts). Pure: test names,
 * messages and output tails come from repository code and model-influenced files, so every one is redacted and
 * neutralised like model text here, whatever the verifier already did.
 */

export const VERIFICATION_CHECK_NAME = 'frognano / verification';
/** Per list in the description (fixed, regressions, …); the check run's annotations carry the lines. */
const LIST_CAP = 20;
const NAME_CHARS = 200;
const TAIL_CHARS = 2000;
/** Regression output tails shown in the description. */
const TAILS_SHOWN = 3;

/** Untrusted text, one line, safe inline in the bot's Markdown. */
function inline(text: string, max = NAME_CHARS): string {
  return untrustedInline(redact(text), max);
}

/** `## Verification`, or the old `## Tests` where the round did not verify (a variant that opts out). */
export function verificationSection(o: VerificationOutcome | undefined, modelTests: TestRun[], note = ''): string[] {
  if (!o) return testsSection(modelTests, note);
  const out = ['## Verification', '', ...(note ? [note, ''] : [])];
  switch (o.state) {
    case 'off':
      out.push(`⚪ **Not verified:** ${inline(o.reason, 500)}.`, '');
      break;
    case 'not_run':
      out.push(
        `⚠️ **Verification did not run:** ${inline(o.reason, 500)}. This is not a pass: nothing was measured.`,
        '',
      );
      break;
    case 'verified':
      out.push(...verdictLines(o.verdict));
      break;
  }
  out.push(...modelSaw(modelTests));
  return out;
}

function verdictLines(v: Verdict): string[] {
  const icon = { success: '✅', failure: '❌', neutral: '⚪' }[v.conclusion];
  const out = [
    `${icon} **${inline(v.headline, 300)}**`,
    '',
    '_Measured by the bot in fresh sandboxes on the base commit and on base + this change, where the model never ran._',
    '',
  ];
  if (v.exitCodesOnly)
    out.push(
      '_No per-test results could be read (no report, no known log format): the exit codes are the verdict._',
      '',
    );
  out.push(...commandTable(v), '');
  out.push(...changeList('Regressions', v.regressions), ...changeList('Fixed', v.fixed));
  out.push(...changeList('Still failing', v.stillFailing), ...changeList('New tests', v.newTests));
  for (const f of v.testFiles.filter((t) => t.removedTests.length || t.newlySkipped.length)) {
    const what = [
      f.removedTests.length ? `${f.removedTests.length} test(s) removed` : '',
      f.newlySkipped.length ? `${f.newlySkipped.length} newly skipped` : '',
    ].filter(Boolean);
    out.push(`- Test file \`${inline(f.file).replace(/`/g, "'")}\` (${f.change}): ${what.join(', ')}`);
  }
  out.push(...findingLines(v.findings), ...scanLines(v), ...tailLines(v), '');
  return out;
}

/** Per command: exit code base → patch. */
function commandTable(v: Verdict): string[] {
  const out = ['| Test command | Base | This change |', '| --- | --- | --- |'];
  const rows = Math.max(v.base.tests.length, v.patched.tests.length);
  for (let i = 0; i < Math.min(rows, 20); i++) {
    const b = v.base.tests[i];
    const p = v.patched.tests[i];
    const cmd = inline((p ?? b)!.command, 200).replace(/\|/g, '\\|');
    out.push(`| ${cmd} | ${exitText(b, v.base.notRun)} | ${exitText(p, v.patched.notRun)} |`);
  }
  if (rows === 0) out.push('| _no test commands_ | | |');
  return out;
}

export function exitText(r: VerifyCommandRun | undefined, sideNotRun?: string): string {
  if (!r) return sideNotRun ? 'not run' : '—';
  if (r.notRun) return 'not run';
  if (r.timedOut) return '⏱️ timed out';
  return r.exitCode === 0 ? '✅ exit 0' : `❌ exit ${r.exitCode ?? 'killed'}`;
}

function changeList(title: string, changes: TestChange[]): string[] {
  if (changes.length === 0) return [];
  const out = [`**${title} (${changes.length})**`, ''];
  for (const c of changes.slice(0, LIST_CAP)) {
    const where = c.file ? ` (${inline(c.line ? `${c.file}:${c.line}` : c.file)})` : '';
    out.push(`- ${inline(c.id)}${where}${c.patched && c.base ? `: ${c.base} → ${c.patched}` : ''}`);
  }
  if (changes.length > LIST_CAP) out.push(`- … and ${changes.length - LIST_CAP} more (the check run lists them)`);
  out.push('');
  return out;
}

function findingLines(findings: Finding[]): string[] {
  if (findings.length === 0) return [];
  const out = [`**Findings on lines this change adds (${findings.length})**`, ''];
  for (const f of findings.slice(0, LIST_CAP))
    out.push(
      `- ${f.severity} · ${inline(f.tool, 50)} ${inline(f.rule, 100)} at ${inline(`${f.file}:${f.line}`)}: ${inline(f.message, 300)}`,
    );
  if (findings.length > LIST_CAP) out.push(`- … and ${findings.length - LIST_CAP} more`);
  out.push('');
  return out;
}

function scanLines(v: Verdict): string[] {
  if (v.scans.length === 0) return [];
  const scans = v.scans.map((s) =>
    s.ran
      ? `${inline(s.tool, 50)} ran`
      : `${inline(s.tool, 50)} not run (${inline(s.reason ?? 'no reason given', 200)})`,
  );
  return [`Scans: ${scans.join('; ')}.`, ''];
}

/** The output tails of the patched commands behind the regressions (or the failing ones when there are none). */
function tailLines(v: Verdict): string[] {
  const failing = v.patched.tests.filter((t) => t.exitCode !== 0 && t.outputTail.trim());
  if (v.conclusion !== 'failure' || failing.length === 0) return [];
  const out: string[] = [];
  for (const t of failing.slice(0, TAILS_SHOWN)) {
    out.push(
      `<details><summary>Output of ${inline(t.command, 100)} on this change (tail)</summary>`,
      '',
      untrustedBlock(redact(t.outputTail), TAIL_CHARS),
      '',
      '</details>',
      '',
    );
  }
  return out;
}

/** The model's own last test run: what it saw, never the result. */
function modelSaw(tests: TestRun[]): string[] {
  if (tests.length === 0) return [];
  const lines = tests.slice(0, 20).map((t) => {
    const r = t.timedOut ? 'timed out' : t.exitCode === 0 ? 'exit 0' : `exit ${t.exitCode ?? 'killed'}`;
    return `- ${inline(t.command, 200)}: ${r}`;
  });
  return [
    '<details><summary>What the model saw (its own last test run, in its own workspace; not the result)</summary>',
    '',
    ...lines,
    '',
    '</details>',
    '',
  ];
}

/** The status comment's line (Markdown, test names neutralised). */
export function verificationStatusLine(o: VerificationOutcome): string {
  switch (o.state) {
    case 'off':
      return `Verification: ⚪ not verified (${inline(o.reason, 300)}).`;
    case 'not_run':
      return `Verification: ⚠️ did not run (${inline(o.reason, 300)}); not a pass.`;
    case 'verified': {
      const icon = { success: '✅', failure: '❌', neutral: '⚪' }[o.verdict.conclusion];
      return `Verification: ${icon} ${inline(o.verdict.headline, 300)}.`;
    }
  }
}
