import { automaticSource } from '../queue/verifyRepair.js';
import { roundName, roundTrigger } from './roundLabels.js';
import { wholeRunUrl } from './runPage.js';
import type { InstallationAccess } from '../github/client.js';
import {
  appendRunHistory,
  getPullRequest,
  setPullRequestBody,
  type HistoryEntry,
} from '../github/followUpPullRequest.js';
import type { BlockedNetworkRequest } from '../github/blockedRequests.js';
import type { TestRun } from '../github/pullRequest.js';
import { verificationSection } from '../github/verification.js';
import type { VerificationOutcome } from '../verify/outcome.js';
import { describeCurrentState, diffAgainstBase, summaryLineOf } from '../github/pullRequestDescription.js';
import { asksOf, type FollowUp, type JobData } from '../queue/schema.js';
import type { LiveRun } from './roundVariant.js';

type FollowUpRun = LiveRun<JobData & { followUp: FollowUp }>;

/** What a round leaves in the description: its head and result, and when it pushed, its summary and tests. */
export interface RoundRecord {
  headSha: string | null;
  result: string;
  pushed?: {
    summary: string;
    tests: TestRun[];
    verification?: VerificationOutcome;
    /** What the egress proxy refused the round's setup commands. */
    blockedRequests?: BlockedNetworkRequest[];
  };
}

/**
 * After a round, the pull request description describes the pull request as it is now (read fresh: a maintainer
 * may have edited it): a pushing round's summary and tests, the files of the whole pull request against its base,
 * and a run-history row for the round with its trigger, head, result and one-line summary.
 */
export async function describeRound(run: FollowUpRun, record: RoundRecord): Promise<void> {
  const { data } = run;
  const f = data.followUp;
  const octokit: InstallationAccess['octokit'] = run.access.octokit;
  const pr = await getPullRequest(octokit, data.owner, data.repo, f.pullNumber);
  let body = pr.body ?? '';
  const draft = { headSha: f.round === 1 ? f.headSha : null, summary: summaryLineOf(body), url: wholeRunUrl(run) };
  if (record.pushed && record.headSha) {
    const where = { owner: data.owner, repo: data.repo, base: pr.base.ref, head: record.headSha };
    // The push is done: a compare that fails leaves the sections as they were (logged) rather than failing the round.
    const diff = await diffAgainstBase(octokit, where).catch((err: unknown) => {
      run.log.warn({ err }, 'could not compare the pull request with its base; its description keeps its sections');
      return null;
    });
    const { summary, tests, verification, blockedRequests } = record.pushed;
    const note = `_Round ${f.round}; the agent's own run is what the model saw._`;
    const section = verification ? { verification: verificationSection(verification, tests, note) } : {};
    if (diff)
      body = describeCurrentState(body, {
        round: f.round,
        summary,
        ...diff,
        baseBranch: pr.base.ref,
        tests,
        ...section,
        blockedRequests,
      });
  }
  const entry: HistoryEntry = {
    round: roundName(data),
    trigger: automaticSource(f.source) ? roundTrigger(data) : triggerOf(data),
    headSha: record.headSha,
    result: record.result,
    url: run.page?.url,
    ...(record.pushed ? { summary: record.pushed.summary } : {}),
  };
  await setPullRequestBody(octokit, data.owner, data.repo, f.pullNumber, appendRunHistory(body, entry, draft));
}

/** `review by maint`; a round that merged asks names each (`comment by a, review by b`). */
function triggerOf(data: JobData & { followUp: FollowUp }): string {
  const asks = asksOf(data.followUp, data.triggeredBy, data.enqueuedAt);
  return asks.map((a) => `${a.source} by ${a.author.login}`).join(', ');
}
