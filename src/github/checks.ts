import { approvalExternalId } from './approvalRule.js';
import type { GitHubClient } from './client.js';
import { safeRunUrl } from './runLink.js';

export const APPROVAL_CHECK_NAME = 'frognano / human approval';

/**
 * The approval gate is a check run on the PR's head commit. GitHub lets apps set `status` only to
 * queued/in_progress/completed, so "waiting for a human" is `completed` + `conclusion: action_required`
 * (which needs a details_url, and which branch protection treats as not passing).
 * Approval re-completes the same check run as `success`.
 */
export async function createApprovalCheck(
  octokit: GitHubClient,
  o: {
    owner: string;
    repo: string;
    headSha: string;
    pullRequestUrl: string;
    issueNumber: number;
    /** Two-person rule: the person who triggered the run; their own approval does not turn the check green. */
    notApprovableBy?: string;
    /** The run's page (runPageUrl): the check's "Details" open it instead of the pull request. */
    detailsUrl?: string;
  },
): Promise<number> {
  const { data } = await octokit.rest.checks.create({
    owner: o.owner,
    repo: o.repo,
    name: APPROVAL_CHECK_NAME,
    head_sha: o.headSha,
    status: 'completed',
    conclusion: 'action_required',
    completed_at: new Date().toISOString(),
    details_url: (o.detailsUrl && safeRunUrl(o.detailsUrl)) || o.pullRequestUrl,
    external_id: approvalExternalId(o.issueNumber, o.notApprovableBy),
    output: {
      title: 'Waiting for a maintainer to approve',
      summary:
        'This change was written by the FrogNano-4B model. A maintainer with write access must review it and ' +
        'submit an approving review; this check then turns green. Nothing here was reviewed by a human yet.' +
        (o.notApprovableBy
          ? ` The approval must come from someone other than ${o.notApprovableBy}, who asked for this run.`
          : ''),
    },
  });
  return data.id;
}

/** Marks the approval check on `headSha` as passed (creating it when it is missing). */
export async function completeApprovalCheck(
  octokit: GitHubClient,
  o: { owner: string; repo: string; headSha: string; approvedBy: string; detailsUrl?: string },
): Promise<number> {
  const output = {
    title: `Approved by @${o.approvedBy}`,
    summary: `@${o.approvedBy} reviewed and approved this FrogNano pull request.`,
  };
  const { data } = await octokit.rest.checks.listForRef({
    owner: o.owner,
    repo: o.repo,
    ref: o.headSha,
    check_name: APPROVAL_CHECK_NAME,
    filter: 'latest',
  });
  const existing = data.check_runs[0];
  const completed_at = new Date().toISOString();
  if (existing) {
    await octokit.rest.checks.update({
      owner: o.owner,
      repo: o.repo,
      check_run_id: existing.id,
      status: 'completed',
      conclusion: 'success',
      completed_at,
      output,
    });
    return existing.id;
  }
  const { data: created } = await octokit.rest.checks.create({
    owner: o.owner,
    repo: o.repo,
    name: APPROVAL_CHECK_NAME,
    head_sha: o.headSha,
    status: 'completed',
    conclusion: 'success',
    completed_at,
    ...(o.detailsUrl ? { details_url: o.detailsUrl } : {}),
    output,
  });
  return created.id;
}

/** Rewrites what a check run says, leaving its status alone (the approval check that keeps waiting says why). */
export async function setCheckOutput(
  octokit: GitHubClient,
  o: { owner: string; repo: string; checkRunId: number },
  output: { title: string; summary: string },
): Promise<void> {
  await octokit.rest.checks.update({ owner: o.owner, repo: o.repo, check_run_id: o.checkRunId, output });
}
