import type { GitHubClient } from './client.js';
import { GITHUB_BODY_LIMIT, NEEDS_REVIEW_LABEL, APPROVED_LABEL, labelNeedsReview } from './pullRequest.js';
import { markdownLink } from './runLink.js';
import { defang, untrustedLine } from './untrusted.js';

/** The runner's name for fetchPullRequest (src/github/pullRequestFetch.ts). */
export { fetchPullRequest as getPullRequest } from './pullRequestFetch.js';

/** REST calls of a follow-up round on the bot's own pull request. */

export const NEEDS_HUMAN_LABEL = 'frognano:needs-human';

function status(e: unknown): number | undefined {
  return typeof e === 'object' && e !== null && 'status' in e ? Number((e as { status: unknown }).status) : undefined;
}

/**
 * Asks the person who triggered the run to review it. GitHub refuses (422) for the PR's author and for
 * people who are not collaborators; that is not worth failing a finished round over.
 */
export async function requestReview(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  pullNumber: number,
  login: string,
): Promise<boolean> {
  try {
    await octokit.rest.pulls.requestReviewers({ owner, repo, pull_number: pullNumber, reviewers: [login] });
    return true;
  } catch (e) {
    if (status(e) === 422 || status(e) === 404) return false;
    throw e;
  }
}

/** A new head needs a new human approval: `frognano:approved` goes, `frognano:needs-review` comes back. */
export async function labelAwaitingReview(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  pullNumber: number,
): Promise<void> {
  await labelNeedsReview(octokit, owner, repo, pullNumber);
  await removeLabel(octokit, owner, repo, pullNumber, APPROVED_LABEL);
}

/** Past the round cap: a person has to take it from here. */
export async function labelNeedsHuman(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  pullNumber: number,
): Promise<void> {
  try {
    await octokit.rest.issues.createLabel({
      owner,
      repo,
      name: NEEDS_HUMAN_LABEL,
      color: 'd93f0b',
      description: 'FrogNano reached its follow-up limit; a person needs to finish this',
    });
  } catch (e) {
    if (status(e) !== 422) throw e;
  }
  await octokit.rest.issues.addLabels({ owner, repo, issue_number: pullNumber, labels: [NEEDS_HUMAN_LABEL] });
}

async function removeLabel(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  pullNumber: number,
  name: string,
): Promise<void> {
  try {
    await octokit.rest.issues.removeLabel({ owner, repo, issue_number: pullNumber, name });
  } catch (e) {
    if (status(e) !== 404) throw e;
  }
}

export async function setPullRequestBody(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  pullNumber: number,
  body: string,
): Promise<void> {
  await octokit.rest.pulls.update({ owner, repo, pull_number: pullNumber, body });
}

export { NEEDS_REVIEW_LABEL };

// ---- run history in the PR description ----

export const HISTORY_START = '<!-- frognano:history -->';
const HISTORY_END = '<!-- /frognano:history -->';
const MAX_HISTORY_ROWS = 60;

export interface HistoryEntry {
  /** `Follow-up 2` */
  round: string;
  /** Who asked, and how (`review by maint`). Logins are shown in code spans: no pings from the table. */
  trigger: string;
  /** Commit the round pushed, or null when it pushed nothing. */
  headSha: string | null;
  result: string;
  /** The round's page (runPageUrl): the round's name links to it. */
  url?: string;
  /** The round's own one-line summary (the model's words: neutralised here), when it has one. */
  summary?: string;
}

/** The draft's row, written when the first follow-up round creates the history (its summary from the description). */
export type DraftRow = Pick<HistoryEntry, 'headSha' | 'summary' | 'url'>;

function cell(text: string): string {
  return defang(text.replace(/[|\n\r]/g, ' ').slice(0, 300));
}

function row(e: HistoryEntry): string {
  const name = e.url ? markdownLink(cell(e.round).replace(/[[\]]/g, ''), e.url) : cell(e.round);
  const head = e.headSha ? `\`${e.headSha.slice(0, 7)}\`` : '—';
  return `| ${name} | ${cell(e.trigger)} | ${head} | ${cell(e.result)} | ${summaryCell(e.summary)} |`;
}

/**
 * The model's one-line summary in a table cell: defanged and flattened (untrustedLine), and unable to end the
 * cell, open HTML or run a code span across cells.
 */
function summaryCell(summary: string | undefined): string {
  const line = summary?.trim() ? untrustedLine(summary, 160) : '';
  if (!line) return '—';
  return line.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/`/g, "'");
}

/**
 * Adds a row to the `Run history` section of a PR description (between hidden markers), creating the
 * section, with a first row for the original draft, when the description has none. Everything outside
 * the markers (the bot's original text, a maintainer's edits) stays as it was.
 */
export function appendRunHistory(body: string, entry: HistoryEntry, draft: DraftRow = { headSha: null }): string {
  const start = body.indexOf(HISTORY_START);
  const end = body.indexOf(HISTORY_END);
  let rows: string[];
  let before = body;
  let after = '';
  if (start >= 0 && end > start) {
    rows = body
      .slice(start + HISTORY_START.length, end)
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| Round ') && !l.startsWith('| ---'));
    before = body.slice(0, start);
    after = body.slice(end + HISTORY_END.length);
  } else {
    rows = [row({ round: 'Draft', trigger: 'issue', result: 'draft pull request opened', ...draft })];
    before = `${body.trimEnd()}\n\n`;
  }
  rows.push(row(entry));
  if (rows.length > MAX_HISTORY_ROWS)
    rows = [
      rows[0]!,
      `| … | | | ${rows.length - MAX_HISTORY_ROWS} earlier rounds not shown | |`,
      ...rows.slice(-(MAX_HISTORY_ROWS - 2)),
    ];
  const header = ['| Round | Trigger | Head | Result | Summary |', '| --- | --- | --- | --- | --- |'];
  const section = [HISTORY_START, '## Run history', '', ...header, ...rows, HISTORY_END].join('\n');
  let next = `${before}${section}${after}`;
  // The history must never push the description past GitHub's limit: cut the text before it instead.
  const over = next.length - (GITHUB_BODY_LIMIT - 512);
  if (over > 0)
    next = `${before.slice(0, Math.max(0, before.length - over - 40))}\n… [description cut]\n\n${section}${after}`;
  return next;
}
