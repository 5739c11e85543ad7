/**
 * The two-person rule travels with the approval check itself: the runner, which read the repository's
 * config, writes into the check's `external_id` whose approval does not count (the person who triggered
 * the run that wrote this head); the app, which sees the approving review, reads it back. No config read
 * in the webhook path, and an old head keeps the rule it was created with.
 */
export interface ApprovalRule {
  issueNumber?: number;
  /** Login (lower-cased) whose approval does not satisfy the check; absent when anyone with write access may approve. */
  notBy?: string;
}

export function approvalExternalId(issueNumber: number, notBy?: string): string {
  return notBy ? `issue-${issueNumber};not-by=${notBy.toLowerCase()}` : `issue-${issueNumber}`;
}

export function parseApprovalExternalId(id: string | null | undefined): ApprovalRule {
  const m = /^issue-(\d+)(?:;not-by=([A-Za-z0-9-]{1,39}))?$/.exec(id ?? '');
  if (!m) return {};
  return { issueNumber: Number(m[1]), ...(m[2] ? { notBy: m[2].toLowerCase() } : {}) };
}

/** Whether `login`'s approval counts under the rule. */
export function approvalCounts(rule: ApprovalRule, login: string): boolean {
  return !rule.notBy || rule.notBy !== login.toLowerCase();
}

/** The rule recorded on the latest approval check of `headSha` (none found: no rule, anyone with write access). */
export async function approvalRuleFor(
  octokit: { rest: { checks: { listForRef(p: { owner: string; repo: string; ref: string; check_name: string; filter: 'latest' }): Promise<{ data: { check_runs: { external_id?: string | null }[] } }> } } },
  o: { owner: string; repo: string; headSha: string; checkName: string },
): Promise<ApprovalRule> {
  const { data } = await octokit.rest.checks.listForRef({ owner: o.owner, repo: o.repo, ref: o.headSha, check_name: o.checkName, filter: 'latest' });
  return parseApprovalExternalId(data.check_runs[0]?.external_id);
}
