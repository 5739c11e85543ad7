import { clip, clipCounted } from '../../util/clip.js';
import type { VerificationOutcome } from '../../verify/outcome.js';
import type {
  Finding,
  ScanStatus,
  TestChange,
  TestFileChange,
  Verdict,
  VerifyCommandRun,
  VerifyConclusion,
} from '../../verify/types.js';
import { escapeShown, formatCount, formatDuration } from './html.js';

/**
 * The round's Verification section: the verdict the bot measured in fresh sandboxes (src/verify/), worded like the
 * pull request description's (src/github/verification.ts). Test names, messages, findings and output tails come
 * from repository code and model-influenced files: every one is escaped, with invisible characters shown.
 */

/** Per list (regressions, fixed, findings, commands …); the check run carries every line. */
const LIST_CAP = 50;
/** Per list of test names inside one test file. */
const NAMES_CAP = 20;
const NAME_CHARS = 300;
const MESSAGE_CHARS = 1000;
const TAIL_CHARS = 20_000;

type BadgeState = VerifyConclusion | 'not_run' | 'off';

/** Class and text per state: fixed strings, so nothing read back from the store reaches an attribute. */
const BADGES: Record<BadgeState, [string, string]> = {
  success: ['badge-success', '✅ success'],
  failure: ['badge-failure', '❌ failure'],
  neutral: ['badge-neutral', '⚪ neutral'],
  not_run: ['badge-not-run', '⚠️ not run'],
  off: ['badge-off', '⚪ off'],
};
const SEVERITY_CLASS: Record<Finding['severity'], string> = { low: 'sev-low', medium: 'sev-medium', high: 'sev-high' };

/** Untrusted text on one line: clipped, escaped, isolated from the text around it (bidi). */
function shown(text: string, max = NAME_CHARS): string {
  return `<bdi>${escapeShown(clip(text, max))}</bdi>`;
}

function badge(state: BadgeState): string {
  const [cls, text] = BADGES[state] ?? BADGES.neutral;
  return `<span class="badge ${cls}">${text}</span>`;
}

/** The section, or nothing for a round stored without a verification outcome (older rounds, variants that opt out). */
export function renderVerification(o: VerificationOutcome | undefined): string {
  if (!o) return '';
  let body: string;
  switch (o.state) {
    case 'off':
      body = `<p class="verify-head">${badge('off')} <b>Not verified:</b> ${shown(o.reason, 500)}.</p>`;
      break;
    case 'not_run':
      body = [
        `<p class="verify-head">${badge('not_run')} <b>Verification did not run:</b> ${shown(o.reason, 500)}. `,
        'This is not a pass: nothing was measured.</p>',
        o.verdict ? `<p class="none">What was measured before it stopped:</p>${verdictBody(o.verdict)}` : '',
      ].join('');
      break;
    case 'verified':
      body = `<p class="verify-head">${badge(o.verdict.conclusion)} <b>${shown(o.verdict.headline, 500)}</b></p>${verdictBody(o.verdict)}`;
      break;
  }
  return `<section id="verification"><h2>Verification</h2>${body}</section>`;
}

function verdictBody(v: Verdict): string {
  return [
    '<p class="none">Measured by the bot in fresh sandboxes on the base commit and on base + this change, where the model never ran.</p>',
    v.exitCodesOnly
      ? '<p class="warn">No per-test results could be read (no report, no known log format): the exit codes are the verdict.</p>'
      : '',
    v.base.notRun ? `<p class="warn">The base was not measured: ${shown(v.base.notRun, 500)}.</p>` : '',
    v.patched.notRun ? `<p class="warn">This change was not measured: ${shown(v.patched.notRun, 500)}.</p>` : '',
    commandTable(v),
    changeList('Regressions', v.regressions),
    changeList('Fixed', v.fixed),
    changeList('Still failing', v.stillFailing),
    changeList('New tests', v.newTests),
    testFileList(v.testFiles),
    findingList(v.findings),
    scanLine(v.scans),
  ].join('');
}

/** One row per test command: base and patched exit codes and durations, the output tails collapsed. */
function commandTable(v: Verdict): string {
  const rows = Math.max(v.base.tests.length, v.patched.tests.length);
  if (rows === 0) return '<p class="none">No test commands.</p>';
  const body: string[] = [];
  for (let i = 0; i < Math.min(rows, LIST_CAP); i++) {
    const b = v.base.tests[i];
    const p = v.patched.tests[i];
    body.push(
      `<tr><td><code>${shown((p ?? b)!.command)}</code></td><td>${runCell(b, v.base.notRun)}</td><td>${runCell(p, v.patched.notRun)}</td></tr>`,
    );
  }
  if (rows > LIST_CAP)
    body.push(`<tr><td colspan="3" class="none">… and ${formatCount(rows - LIST_CAP)} more</td></tr>`);
  const base = v.base.cached ? 'Base <small>(cached)</small>' : 'Base';
  return `<table class="verify-runs"><thead><tr><th>Test command</th><th>${base}</th><th>This change</th></tr></thead><tbody>${body.join('')}</tbody></table>`;
}

function runCell(r: VerifyCommandRun | undefined, sideNotRun?: string): string {
  if (!r) return sideNotRun ? '<span class="none">not run</span>' : '<span class="none">—</span>';
  if (r.notRun) return `<span class="none">not run</span> (${shown(r.notRun, 300)})`;
  const verdict = r.timedOut
    ? '<span class="verdict fail">⏱️ timed out</span>'
    : r.exitCode === 0
      ? '<span class="verdict pass">✅ exit 0</span>'
      : `<span class="verdict fail">❌ exit ${r.exitCode ?? 'killed'}</span>`;
  const tail = r.outputTail.trim()
    ? `<details class="tail"><summary>Output (tail)</summary><pre class="out">${escapeShown(clipCounted(r.outputTail, TAIL_CHARS))}</pre></details>`
    : '';
  return `${verdict} · ${formatDuration(r.durationMs)}${tail}`;
}

function more(total: number, cap: number): string {
  return total > cap ? `<li class="none">… and ${formatCount(total - cap)} more</li>` : '';
}

function where(file: string | undefined, line: number | undefined): string {
  return file ? ` <span class="where">${shown(line ? `${file}:${line}` : file)}</span>` : '';
}

function changeList(title: string, changes: TestChange[]): string {
  if (changes.length === 0) return '';
  const items = changes.slice(0, LIST_CAP).map((c) => {
    const move = c.base && c.patched ? ` <span class="move">${shown(`${c.base} → ${c.patched}`)}</span>` : '';
    const own = c.baseTestsOnPatch
      ? ` <span class="move">(the base's version of the test on this change: ${shown(c.baseTestsOnPatch)})</span>`
      : '';
    const message = c.message?.trim()
      ? `<pre class="out msg">${escapeShown(clipCounted(c.message, MESSAGE_CHARS))}</pre>`
      : '';
    return `<li><code>${shown(c.id)}</code>${where(c.file, c.line)}${move}${own}${message}</li>`;
  });
  return `<h3>${title} (${formatCount(changes.length)})</h3><ul class="verify-list">${items.join('')}${more(changes.length, LIST_CAP)}</ul>`;
}

const FILE_CHANGE = {
  added: 'added',
  modified: 'changed',
  deleted: 'deleted',
  unchanged: 'not touched by this change',
} as const;

function testFileList(files: TestFileChange[]): string {
  if (files.length === 0) return '';
  const names = (label: string, list: string[]): string => {
    if (list.length === 0) return '';
    const shownNames = list.slice(0, NAMES_CAP).map((t) => `<code>${shown(t)}</code>`);
    const rest = list.length > NAMES_CAP ? `, … and ${formatCount(list.length - NAMES_CAP)} more` : '';
    return `<br>${label} (${formatCount(list.length)}): ${shownNames.join(', ')}${rest}`;
  };
  const items = files.slice(0, LIST_CAP).map((f) => {
    const parts = [
      names('removed', f.removedTests),
      names('newly skipped', f.newlySkipped),
      names('result changed by the edit', f.changedTests),
    ];
    return `<li><code>${shown(f.file)}</code> ${FILE_CHANGE[f.change] ?? ''}${parts.join('')}</li>`;
  });
  return `<h3>Test files (${formatCount(files.length)})</h3><ul class="verify-list">${items.join('')}${more(files.length, LIST_CAP)}</ul>`;
}

function findingList(findings: Finding[]): string {
  if (findings.length === 0) return '';
  const items = findings.slice(0, LIST_CAP).map((f) => {
    const sev = `<span class="sev ${SEVERITY_CLASS[f.severity] ?? 'sev-low'}">${shown(f.severity, 10)}</span>`;
    return `<li>${sev} ${shown(f.tool, 50)} <code>${shown(f.rule, 100)}</code> at${where(f.file, f.line)}: ${shown(f.message, 500)}</li>`;
  });
  return `<h3>Findings on lines this change adds (${formatCount(findings.length)})</h3><ul class="verify-list">${items.join('')}${more(findings.length, LIST_CAP)}</ul>`;
}

function scanLine(scans: ScanStatus[]): string {
  if (scans.length === 0) return '';
  const parts = scans.slice(0, LIST_CAP).map((s) => {
    if (!s.ran) return `${shown(s.tool, 50)} not run (${shown(s.reason ?? 'no reason given', 300)})`;
    return s.files === undefined
      ? `${shown(s.tool, 50)} ran`
      : `${shown(s.tool, 50)} ran (${formatCount(s.files)} file${s.files === 1 ? '' : 's'})`;
  });
  return `<p class="scans">Scans: ${parts.join('; ')}.</p>`;
}
