import type { Context } from 'probot';
import { approvalCounts, approvalRuleFor, secondApprovalOutput } from '../github/approvalRule.js';
import { APPROVAL_CHECK_NAME, completeApprovalCheck, setCheckOutput } from '../github/checks.js';
import type { GitHubClient } from '../github/client.js';
import { getUserPermission } from '../github/permissions.js';
import { labelApproved, notBotPullRequestReason } from '../github/pullRequest.js';

export type ReviewDecision = { action: 'approved'; checkRunId: number } | { action: 'ignored'; why: string };

/**
 * The approval gate: an approving review by someone with write access on a frognano pull request turns the
 * `frognano / human approval` check green and swaps `frognano:needs-review` for `frognano:approved`.
 * Everything else is ignored, with the reason logged (never commented: reviews are frequent, noise is not help).
 */
export async function handleReviewSubmitted(
  context: Context<'pull_request_review.submitted'>,
): Promise<ReviewDecision> {
  const { review, pull_request: pr, repository } = context.payload;
  const owner = repository.owner.login;
  const repo = repository.name;
  const decision = await decide();
  const fields = { pr: pr.number, reviewer: review.user?.login, state: review.state };
  if (decision.action === 'ignored') context.log.debug(fields, `review ignored: ${decision.why}`);
  else context.log.info(fields, 'frognano pull request approved');
  return decision;

  async function decide(): Promise<ReviewDecision> {
    if (String(review.state).toLowerCase() !== 'approved')
      return { action: 'ignored', why: `review state is ${review.state}, not approved` };
    const notOurs = notBotPullRequestReason(pr);
    if (notOurs) return { action: 'ignored', why: notOurs };
    if (pr.state !== 'open') return { action: 'ignored', why: 'the pull request is not open' };
    const login = review.user?.login;
    if (!login || review.user?.type === 'Bot') return { action: 'ignored', why: 'the reviewer is not a person' };
    // Approval of an older commit does not cover what is on the branch now.
    if (review.commit_id && review.commit_id !== pr.head.sha) {
      return {
        action: 'ignored',
        why: `the approval is for ${review.commit_id.slice(0, 7)}, but the head is ${pr.head.sha.slice(0, 7)}`,
      };
    }
    const perm = await getUserPermission(context.octokit, owner, repo, login);
    if (!perm.allowed)
      return { action: 'ignored', why: `@${login} has ${perm.role} access; write access is needed to approve` };
    const octokit = context.octokit as unknown as GitHubClient;
    // Two-person rule (src/github/approvalRule.ts): the runner named whose approval of this head does not count.
    const rule = await approvalRuleFor(octokit, { owner, repo, headSha: pr.head.sha, checkName: APPROVAL_CHECK_NAME });
    if (!approvalCounts(rule, login)) {
      // The check keeps waiting, and says why, so the approver is not left wondering.
      if (rule.checkRunId)
        await setCheckOutput(octokit, { owner, repo, checkRunId: rule.checkRunId }, secondApprovalOutput(login));
      return {
        action: 'ignored',
        why: `@${login} asked for the run that wrote this head; another maintainer must approve it`,
      };
    }
    const checkRunId = await completeApprovalCheck(octokit, {
      owner,
      repo,
      headSha: pr.head.sha,
      approvedBy: login,
      detailsUrl: pr.html_url,
    });
    await labelApproved(octokit, owner, repo, pr.number);
    return { action: 'approved', checkRunId };
  }
}
