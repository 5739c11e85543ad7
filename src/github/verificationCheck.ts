import { redact } from '../util/redact.js';
import type { VerificationOutcome } from '../verify/outcome.js';
import type { Verdict } from '../verify/types.js';
import type { GitHubClient } from './client.js';
import { safeRunUrl } from './runLink.js';
import { defang } from './untrusted.js';
import { exitText, VERIFICATION_CHECK_NAME } from './verification.js';

/** GitHub takes at most 50 annotations per create or update request. */
export const ANNOTATIONS_PER_REQUEST = 50;
/** Annotations on one check run in all; the summary says how many more there were. */
export const MAX_ANNOTATIONS = 300;
/** GitHub's limit on `output.summary` (and `text`) is 65,535 characters. */
const SUMMARY_LIMIT = 60_000;

export interface CheckAnnotation {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: 'failure' | 'warning' | 'notice';
  title: string;
  message: string;
}

export interface VerificationCheckOutput {
  conclusion: 'success' | 'failure' | 'neutral' | 'skipped';
  title: string;
  summary: string;
  annotations: CheckAnnotation[];
  /** Annotations left out by MAX_ANNOTATIONS. */
  dropped: number;
}

/** Plain text from untrusted text (check run titles and messages are not Markdown, but GitHub links in them). */
function plain(text: string, max: number): string {
  const t = defang(redact(text)).replace(/\r\n?/g, '\n');
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

/** Markdown table cell text. */
function cell(text: string, max: number): string {
  return plain(text, max)
    .replace(/\s+/g, ' ')
    .replace(/[|`*_[\]<>\\]/g, (c) => `\\${c}`);
}

/** A repository-relative path a check annotation may name (anything else is left to the summary). */
function annotationPath(file: string | undefined): string | undefined {
  if (!file || file.length > 500 || file.startsWith('/') || /(^|\/)\.\.(\/|$)|[\0\n\\]/.test(file)) return undefined;
  return file.replace(/^\.\//, '');
}

/** The check run's conclusion, title, summary table and annotations for one outcome. Pure. */
export function verificationCheckOutput(o: VerificationOutcome): VerificationCheckOutput {
  if (o.state === 'off')
    return {
      conclusion: 'skipped',
      title: 'Not verified',
      summary: plain(o.reason, 2000),
      annotations: [],
      dropped: 0,
    };
  if (o.state === 'not_run')
    return {
      conclusion: 'neutral',
      title: 'Verification did not run',
      summary: `${plain(o.reason, 2000)}\n\nNothing was measured; this is not a pass.`,
      annotations: [],
      dropped: 0,
    };
  const v = o.verdict;
  const all = annotationsOf(v);
  const annotations = all.slice(0, MAX_ANNOTATIONS);
  const dropped = all.length - annotations.length;
  let summary = summaryOf(v, dropped);
  if (summary.length > SUMMARY_LIMIT) summary = `${summary.slice(0, SUMMARY_LIMIT - 30)}\n\n… [summary cut]`;
  return {
    conclusion: v.conclusion,
    title: plain(v.headline, 200).replace(/\s+/g, ' '),
    summary,
    annotations,
    dropped,
  };
}

function annotationsOf(v: Verdict): CheckAnnotation[] {
  const out: CheckAnnotation[] = [];
  for (const r of v.regressions) {
    const p = annotationPath(r.file);
    if (!p) continue;
    const line = r.line && r.line > 0 ? r.line : 1;
    const message = `Passed on the base commit, ${r.patched ?? 'failed'} with this change.${r.message ? `\n\n${plain(r.message, 2000)}` : ''}`;
    out.push({
      path: p,
      start_line: line,
      end_line: line,
      annotation_level: 'failure',
      title: plain(`Regression: ${r.id}`, 250),
      message,
    });
  }
  for (const f of v.findings) {
    const p = annotationPath(f.file);
    if (!p) continue;
    const line = f.line > 0 ? f.line : 1;
    out.push({
      path: p,
      start_line: line,
      end_line: line,
      annotation_level: f.severity === 'high' ? 'failure' : 'warning',
      title: plain(`${f.kind === 'secret' ? 'Secret' : 'Security'}: ${f.tool} ${f.rule}`, 250),
      message: plain(f.message, 2000),
    });
  }
  return out;
}

function summaryOf(v: Verdict, dropped: number): string {
  const out = [
    `**${cell(v.headline, 300)}**`,
    '',
    'Measured in fresh sandboxes on the base commit and on base + this change; the model never ran there.',
    '',
    '| Test command | Base | This change |',
    '| --- | --- | --- |',
  ];
  const rows = Math.max(v.base.tests.length, v.patched.tests.length);
  for (let i = 0; i < Math.min(rows, 50); i++) {
    const b = v.base.tests[i];
    const p = v.patched.tests[i];
    out.push(`| ${cell((p ?? b)!.command, 200)} | ${exitText(b, v.base.notRun)} | ${exitText(p, v.patched.notRun)} |`);
  }
  out.push(
    '',
    `Fixed: ${v.fixed.length} · Regressions: ${v.regressions.length} · Still failing: ${v.stillFailing.length} · New tests: ${v.newTests.length} · Findings: ${v.findings.length}`,
    '',
  );
  if (v.exitCodesOnly) out.push('No per-test results could be read: the exit codes are the verdict.', '');
  for (const [title, list] of [
    ['Regressions', v.regressions],
    ['Fixed', v.fixed],
  ] as const) {
    if (list.length === 0) continue;
    out.push(`**${title}**`, '', ...list.slice(0, 100).map((c) => `- ${cell(c.id, 200)}`));
    if (list.length > 100) out.push(`- … and ${list.length - 100} more`);
    out.push('');
  }
  const scans = v.scans.map((s) =>
    s.ran ? `${cell(s.tool, 50)}: ran` : `${cell(s.tool, 50)}: not run (${cell(s.reason ?? 'no reason given', 200)})`,
  );
  if (scans.length) out.push(`Scans: ${scans.join('; ')}`, '');
  if (dropped > 0) out.push(`${dropped} more annotations were left out (at most ${MAX_ANNOTATIONS}).`, '');
  return out.join('\n');
}

/**
 * The `frognano / verification` check run on the pushed head: created with the first 50 annotations, then updated
 * with the rest 50 at a time (GitHub's limit per request). Returns the check run's id.
 */
export async function publishVerificationCheck(
  octokit: GitHubClient,
  o: { owner: string; repo: string; headSha: string; outcome: VerificationOutcome; detailsUrl?: string },
): Promise<number> {
  const out = verificationCheckOutput(o.outcome);
  const detailsUrl = o.detailsUrl ? safeRunUrl(o.detailsUrl) : null;
  const output = (annotations: CheckAnnotation[]) => ({ title: out.title, summary: out.summary, annotations });
  const { data } = await octokit.rest.checks.create({
    owner: o.owner,
    repo: o.repo,
    name: VERIFICATION_CHECK_NAME,
    head_sha: o.headSha,
    status: 'completed',
    conclusion: out.conclusion,
    completed_at: new Date().toISOString(),
    ...(detailsUrl ? { details_url: detailsUrl } : {}),
    output: output(out.annotations.slice(0, ANNOTATIONS_PER_REQUEST)),
  });
  for (let i = ANNOTATIONS_PER_REQUEST; i < out.annotations.length; i += ANNOTATIONS_PER_REQUEST) {
    await octokit.rest.checks.update({
      owner: o.owner,
      repo: o.repo,
      check_run_id: data.id,
      output: output(out.annotations.slice(i, i + ANNOTATIONS_PER_REQUEST)),
    });
  }
  return data.id;
}
