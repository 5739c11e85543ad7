import type { GitHubClient } from './client.js';
import { blockedRequestsSection, type BlockedNetworkRequest } from './blockedRequests.js';
import type { NumstatEntry } from './git.js';
import { filesSection, summarySection, testsSection, type TestRun } from './pullRequest.js';
import { HISTORY_START } from './followUpPullRequest.js';

/**
 * The pull request description describes the pull request as it is now: after a follow-up round its Summary and
 * Tests are the latest round's and its files table is the whole pull request against its base (earlier rounds
 * keep their one-line summaries in the run history, src/github/followUpPullRequest.ts).
 */

/** GitHub's compare API lists at most this many files. */
const COMPARE_FILE_CAP = 300;

/** The pull request's whole diff against its base (`base...head`, from their merge base), as numstat entries. */
export async function diffAgainstBase(
  octokit: GitHubClient,
  o: { owner: string; repo: string; base: string; head: string },
): Promise<{ files: NumstatEntry[]; capped: boolean }> {
  const { data } = await octokit.rest.repos.compareCommitsWithBasehead({
    owner: o.owner,
    repo: o.repo,
    basehead: `${o.base}...${o.head}`,
  });
  const files = (data.files ?? []).map((f) => ({
    path: f.filename,
    additions: f.additions,
    deletions: f.deletions,
    // GitHub gives a binary file no patch and no line counts.
    binary: f.patch === undefined && f.changes === 0 && f.status !== 'renamed' && f.status !== 'removed',
  }));
  return { files, capped: files.length >= COMPARE_FILE_CAP };
}

export interface CurrentPullRequest {
  round: number;
  /** The latest round's summary (the model's final message, redacted). */
  summary: string;
  /** The whole pull request against its base. */
  files: NumstatEntry[];
  capped?: boolean;
  baseBranch: string;
  /** The latest round's test runs. */
  tests: TestRun[];
  /** The latest round's Verification section (src/github/verification.ts), in place of its Tests section. */
  verification?: string[];
  /** What the egress proxy refused the latest round's setup commands (its own section, when any). */
  blockedRequests?: BlockedNetworkRequest[];
}

const SUMMARY = /^## Summary[ \t]*$/m;
/** What follows the sections the bot rewrites: its run details, or the history when those were removed. */
const AFTER_SECTIONS = /^## Run[ \t]*$|^<!-- frognano:history -->$|^<details><summary>Trajectory/m;

/**
 * Rewrites the Summary, Files changed and Tests (or Verification) sections of a description the bot wrote; everything else (the run
 * details, the trajectory, the history, what a maintainer added) stays. A description whose sections are gone (a
 * maintainer rewrote it) is left as it is.
 */
export function describeCurrentState(body: string, now: CurrentPullRequest): string {
  const start = body.search(SUMMARY);
  if (start < 0) return body;
  const rest = body.slice(start + 1);
  const endInRest = rest.search(AFTER_SECTIONS);
  const end = endInRest < 0 ? body.length : start + 1 + endInRest;
  const sections = [
    ...summarySection(
      now.summary,
      `_From follow-up round ${now.round}, the latest; earlier rounds are in the run history._`,
    ),
    ...filesSection(now.files, filesNote(now)),
    ...(now.verification ?? testsSection(now.tests, `_Run by the agent in follow-up round ${now.round}._`)),
    ...blockedRequestsSection(now.blockedRequests),
  ];
  const tail = body.slice(end);
  return `${body.slice(0, start)}${sections.join('\n')}${tail.startsWith('\n') || tail === '' ? '' : '\n'}${tail}`;
}

function filesNote(now: CurrentPullRequest): string {
  const branch = now.baseBranch.replace(/[`\n]/g, '');
  const cap = now.capped ? ` GitHub lists at most ${COMPARE_FILE_CAP} files; there may be more.` : '';
  return `_The whole pull request against \`${branch}\`, after follow-up round ${now.round}.${cap}_`;
}

/** The first line of the description's Summary (the draft's, before any round replaced it), for its history row. */
export function summaryLineOf(body: string): string {
  if (body.includes(HISTORY_START)) return '';
  const start = body.search(SUMMARY);
  if (start < 0) return '';
  const after = body.slice(start).split('\n').slice(1);
  const line = after.find((l) => l.trim() && !l.startsWith('```') && !l.startsWith('~~~'));
  return line && !line.startsWith('#') ? line.trim() : '';
}
