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

/** The rule recorded on the latest approval check of `headSha`, and that check's id (none found: no rule). */
export async function approvalRuleFor(
  octokit: {
    rest: {
      checks: {
        listForRef(p: {
          owner: string;
          repo: string;
          ref: string;
          check_name: string;
          filter: 'latest';
        }): Promise<{ data: { check_runs: { id: number; external_id?: string | null }[] } }>;
      };
    };
  },
  o: { owner: string; repo: string; headSha: string; checkName: string },
): Promise<ApprovalRule & { checkRunId?: number }> {
  const { data } = await octokit.rest.checks.listForRef({
    owner: o.owner,
    repo: o.repo,
    ref: o.headSha,
    check_name: o.checkName,
    filter: 'latest',
  });
  const run = data.check_runs[0];
  return run ? { ...parseApprovalExternalId(run.external_id), checkRunId: run.id } : {};
}

/** What the approval check says after the trigger approved their own run's head: who must approve instead. */
export function secondApprovalOutput(login: string): { title: string; summary: string } {
  return {
    title: 'Waiting for a second maintainer',
    summary:
      `${login} approved, but asked for the run that wrote this commit. By this repository's two-person rule another ` +
      'maintainer with write access must approve it (`approval.allowTriggerApproval` in `.github/frognano.yml` turns the rule off).',
  };
}
