import picomatch from 'picomatch';
import { blockedRequestsSection, type BlockedNetworkRequest } from './blockedRequests.js';
import type { GitHubClient } from './client.js';
import { BOT_BRANCH_PREFIX, type NumstatEntry } from './git.js';
import type { RepoConfig } from './repoConfig.js';
import { RUN_PAGE_NOTE, safeRunUrl } from './runLink.js';
import { defang, untrustedBlock, untrustedLine } from './untrusted.js';

/** GitHub rejects pull request bodies longer than this. */
export const GITHUB_BODY_LIMIT = 65_536;
/** Kept free below the limit: GitHub's count and JS string length differ for some characters. */
const BODY_SAFETY_MARGIN = 512;
/** With a run page to link, the description keeps only a summary of the steps; the page has them all. */
export const TRAJECTORY_SUMMARY_CHARS = 6000;

export const NEEDS_REVIEW_LABEL = 'frognano:needs-review';
export const APPROVED_LABEL = 'frognano:approved';
export const LABELS: Record<string, { color: string; description: string }> = {
  [NEEDS_REVIEW_LABEL]: {
    color: 'fbca04',
    description: 'Written by FrogNano; a maintainer must review and approve it',
  },
  [APPROVED_LABEL]: { color: '0e8a16', description: 'FrogNano pull request approved by a maintainer' },
};

const WORKFLOW_GLOB = '.github/workflows/**';

export type GuardrailVerdict = { ok: true } | { ok: false; reason: string };

/** Refuses patches that are too big or touch paths the repository protects. Runs on the host's own diffstat. */
export function checkGuardrails(files: NumstatEntry[], cfg: RepoConfig): GuardrailVerdict {
  const { maxFilesChanged, maxLinesChanged } = cfg.limits;
  if (files.length > maxFilesChanged) {
    return {
      ok: false,
      reason: `the patch changes ${files.length} files; this repository allows at most ${maxFilesChanged} (limits.maxFilesChanged)`,
    };
  }
  const lines = files.reduce((n, f) => n + f.additions + f.deletions, 0);
  if (lines > maxLinesChanged) {
    return {
      ok: false,
      reason: `the patch changes ${lines} lines; this repository allows at most ${maxLinesChanged} (limits.maxLinesChanged)`,
    };
  }
  const opts = { dot: true };
  if (!cfg.allowWorkflowChanges) {
    const isWorkflow = picomatch(WORKFLOW_GLOB, opts);
    const hit = files.find((f) => isWorkflow(f.path));
    if (hit) {
      return {
        ok: false,
        reason: `the patch changes \`${hit.path}\`; workflow files may only change when allowWorkflowChanges is true`,
      };
    }
  }
  for (const g of cfg.forbiddenPaths) {
    const isMatch = picomatch(g, opts);
    const hit = files.find((f) => isMatch(f.path));
    if (hit)
      return { ok: false, reason: `the patch changes \`${hit.path}\`, which matches the forbidden path \`${g}\`` };
  }
  return { ok: true };
}

export interface TestRun {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  outputTail: string;
}

export interface PullRequestBodyInput {
  issueNumber: number;
  /** The model's final message. */
  summary: string;
  files: NumstatEntry[];
  tests: TestRun[];
  /** How the run ended (`completed`, ...), and any limit that was hit, in words. */
  exitReason: string;
  /** The exit reason in words (`the model finished`). */
  exitReasonText?: string;
  limitsHit?: string[];
  turns: number;
  elapsedSeconds: number;
  model?: string;
  runner?: string;
  /** The job id: the runner keeps the full trajectory and its log under it (its host path is not for the public). */
  jobId?: string;
  /** Renders the trajectory within a character budget (B's renderTrajectoryMarkdown). */
  renderTrajectory?: (maxChars: number) => string;
  /** The round's page (runPageUrl): linked, and the trajectory here shrinks to a summary of the steps. */
  runPageUrl?: string;
  /** The Verification section (src/github/verification.ts), in place of the Tests section when the round verified. */
  verification?: string[];
  /** What the egress proxy refused the setup commands (src/github/blockedRequests.ts); a section when any. */
  blockedRequests?: BlockedNetworkRequest[];
}

/** The pull request description; always within GitHub's 65,536-character limit (the trajectory shrinks to fit). */
export function renderPullRequestBody(i: PullRequestBodyInput): string {
  const parts: string[] = [];
  parts.push(
    '> [!WARNING]',
    '> **This pull request requires human approval.** It was written by the FrogNano-4B model without human review.',
    '> Read every change and the tests before approving; the `frognano / human approval` check stays blocked until a',
    '> maintainer with write access approves the pull request.',
    '',
    `Refs #${i.issueNumber}`,
    '',
    ...summarySection(i.summary),
    ...filesSection(i.files),
    ...(i.verification ?? testsSection(i.tests)),
    ...blockedRequestsSection(i.blockedRequests),
  );

  parts.push('## Run', '');
  parts.push(`- Exit reason: \`${i.exitReason}\`${i.exitReasonText ? ` (${i.exitReasonText})` : ''}`);
  if (i.limitsHit && i.limitsHit.length > 0) parts.push(`- Limits hit: ${i.limitsHit.join('; ')}`);
  parts.push(`- Turns: ${i.turns}, elapsed: ${Math.round(i.elapsedSeconds)} s`);
  if (i.model) parts.push(`- Model: ${i.model}`);
  if (i.runner) parts.push(`- Ran on ${i.runner}`);
  const job = i.jobId ? `job \`${defang(i.jobId.replace(/`/g, "'"))}\`` : '';
  const pageUrl = i.runPageUrl ? safeRunUrl(i.runPageUrl) : null;
  if (pageUrl)
    parts.push(
      `- Full trajectory: [every step, with timing and tokens](${pageUrl}) (${RUN_PAGE_NOTE})${job ? `, ${job}` : ''}`,
    );
  else if (job) parts.push(`- Full trajectory: kept by the runner with its log, ${job}`);
  parts.push('');

  const head = parts.join('\n');
  const summaryOnly = Boolean(pageUrl);
  const open = `\n<details><summary>Trajectory${summaryOnly ? ' (summary; the run page has every step)' : ''}</summary>\n\n`;
  const close = '\n\n</details>\n';
  const room = GITHUB_BODY_LIMIT - BODY_SAFETY_MARGIN - head.length - open.length - close.length;
  const budget = summaryOnly ? Math.min(room, TRAJECTORY_SUMMARY_CHARS) : room;
  if (!i.renderTrajectory) return clampBody(head);
  if (budget < 500) return clampBody(`${head}\n_The trajectory is too long to include here; see the stored JSON._\n`);
  let traj = i.renderTrajectory(budget);
  if (traj.length > budget) traj = `${traj.slice(0, budget - 60)}\n\n… [trajectory cut to fit GitHub's limit]`;
  // The renderer fences what the model wrote; defang keeps mentions, references and markers inert in it too.
  return clampBody(`${head}${open}${defang(traj)}${close}`);
}

/** `## Summary`: the model's final message, fenced (its own words, unreviewed). */
export function summarySection(summary: string, note = ''): string[] {
  const text = summary.trim() ? untrustedBlock(summary, 8000) : '_The model gave no final message._';
  return ['## Summary', '', ...(note ? [note, ''] : []), text, ''];
}

/** `## Files changed (N, +a −d)` and a table of at most 200 files. */
export function filesSection(files: NumstatEntry[], note = ''): string[] {
  const adds = files.reduce((n, f) => n + f.additions, 0);
  const dels = files.reduce((n, f) => n + f.deletions, 0);
  const out = [`## Files changed (${files.length}, +${adds} −${dels})`, '', ...(note ? [note, ''] : [])];
  out.push('| File | + | − |', '| --- | ---: | ---: |');
  const shown = files.slice(0, 200);
  for (const f of shown) {
    const name = `\`${defang(f.path).replace(/[|`\n]/g, '_')}\``;
    out.push(f.binary ? `| ${name} | binary | |` : `| ${name} | ${f.additions} | ${f.deletions} |`);
  }
  if (files.length > shown.length) out.push(`| … and ${files.length - shown.length} more files | | |`);
  out.push('');
  return out;
}

/** `## Tests`: each configured test command the agent ran after finishing, with the tail of a failure's output. */
export function testsSection(tests: TestRun[], note = ''): string[] {
  const out = ['## Tests', '', ...(note ? [note, ''] : [])];
  if (tests.length === 0) {
    out.push(
      '_No test commands are configured (`testCommands` in `.github/frognano.yml`); the agent ran none after finishing._',
      '',
    );
    return out;
  }
  for (const t of tests.slice(0, 20)) {
    const verdict = t.timedOut
      ? '⏱️ timed out'
      : t.exitCode === 0
        ? '✅ passed'
        : `❌ failed (exit ${t.exitCode ?? 'killed'})`;
    out.push(`- \`${defang(t.command.replace(/[`\n]/g, "'").slice(0, 300))}\`: ${verdict}`);
    if (t.exitCode !== 0 && t.outputTail.trim()) {
      out.push(
        '',
        '  <details><summary>Output (tail)</summary>',
        '',
        untrustedBlock(t.outputTail, 3000),
        '',
        '  </details>',
      );
    }
  }
  out.push('');
  return out;
}

function clampBody(body: string): string {
  const max = GITHUB_BODY_LIMIT - BODY_SAFETY_MARGIN;
  return body.length <= max ? body : `${body.slice(0, max - 40)}\n\n… [description cut]`;
}

/** `frognano: <issue title>`; the title is the issue author's text, so it is defanged like model text. */
export function pullRequestTitle(issueTitle: string, issueNumber: number): string {
  const t = untrustedLine(issueTitle, 200);
  return `frognano: ${t || `issue #${issueNumber}`}`;
}

function status(e: unknown): number | undefined {
  return typeof e === 'object' && e !== null && 'status' in e ? Number((e as { status: unknown }).status) : undefined;
}

/** The slice of a pull request (REST answer or webhook payload) that says who opened it and from where. */
export interface PullRequestOrigin {
  user?: { type?: string } | null;
  head: { ref: string; repo?: { full_name: string } | null };
  base: { repo: { full_name: string } };
}

/**
 * True for a pull request frognano opened: a bot account's, from a `frognano/` branch of the repository itself
 * (a fork can name its branch `frognano/...` too, and a person can push one). Commands, reviews and follow-ups
 * act only on these.
 */
export function isBotPullRequest(pr: PullRequestOrigin): boolean {
  return notBotPullRequestReason(pr) === null;
}

/** Why a pull request is not one frognano opened (for logs), or null when it is. */
export function notBotPullRequestReason(pr: PullRequestOrigin): string | null {
  if (!pr.head.ref.startsWith(BOT_BRANCH_PREFIX)) return `branch ${pr.head.ref} is not a frognano branch`;
  if (pr.head.repo?.full_name !== pr.base.repo.full_name) return 'the pull request comes from a fork';
  if (pr.user?.type !== 'Bot') return 'the pull request was not opened by a bot';
  return null;
}

/** Creates the label when the repository lacks it (422 = it exists already). */
export async function ensureLabel(octokit: GitHubClient, owner: string, repo: string, name: string): Promise<void> {
  const spec = LABELS[name] ?? { color: 'ededed', description: '' };
  try {
    await octokit.rest.issues.createLabel({ owner, repo, name, color: spec.color, description: spec.description });
  } catch (e) {
    if (status(e) !== 422) throw e;
  }
}

export interface OpenPullRequestInput {
  owner: string;
  repo: string;
  head: string;
  base: string;
  title: string;
  body: string;
}

/**
 * Opens a DRAFT pull request. When one is already open for the same branch (a job that ran again after
 * being handed back) its description is updated instead.
 */
export async function openDraftPullRequest(
  octokit: GitHubClient,
  i: OpenPullRequestInput,
): Promise<{ number: number; url: string; created: boolean }> {
  try {
    const { data } = await octokit.rest.pulls.create({
      owner: i.owner,
      repo: i.repo,
      head: i.head,
      base: i.base,
      title: i.title,
      body: i.body,
      draft: true,
      maintainer_can_modify: true,
    });
    return { number: data.number, url: data.html_url, created: true };
  } catch (e) {
    if (status(e) !== 422) throw e;
    const { data: open } = await octokit.rest.pulls.list({
      owner: i.owner,
      repo: i.repo,
      head: `${i.owner}:${i.head}`,
      state: 'open',
    });
    if (open.length === 0) throw e;
    const pr = open[0];
    await octokit.rest.pulls.update({
      owner: i.owner,
      repo: i.repo,
      pull_number: pr.number,
      title: i.title,
      body: i.body,
    });
    return { number: pr.number, url: pr.html_url, created: false };
  }
}

/** Labels a pull request `frognano:needs-review`, creating the label first when missing. */
export async function labelNeedsReview(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  prNumber: number,
): Promise<void> {
  await ensureLabel(octokit, owner, repo, NEEDS_REVIEW_LABEL);
  await octokit.rest.issues.addLabels({ owner, repo, issue_number: prNumber, labels: [NEEDS_REVIEW_LABEL] });
}

/** Swaps `frognano:needs-review` for `frognano:approved`. */
export async function labelApproved(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  prNumber: number,
): Promise<void> {
  await ensureLabel(octokit, owner, repo, APPROVED_LABEL);
  await octokit.rest.issues.addLabels({ owner, repo, issue_number: prNumber, labels: [APPROVED_LABEL] });
  try {
    await octokit.rest.issues.removeLabel({ owner, repo, issue_number: prNumber, name: NEEDS_REVIEW_LABEL });
  } catch (e) {
    if (status(e) !== 404) throw e; // someone removed it already
  }
}
