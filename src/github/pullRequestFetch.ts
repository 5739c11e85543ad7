import { z } from 'zod';

/**
 * The one slice of a pull request the app and the runner read, from the REST answer or a webhook payload.
 * GitHub always sends `html_url`; `head.repo` is null when the fork was deleted.
 */
export const PullRequestSlice = z.object({
  number: z.number().int().positive(),
  state: z.string(),
  html_url: z.string(),
  user: z.object({ type: z.string().optional() }).nullable().optional(),
  body: z.string().nullable().optional(),
  head: z.object({ ref: z.string(), sha: z.string(), repo: z.object({ full_name: z.string() }).nullable().optional() }),
  base: z.object({ ref: z.string(), repo: z.object({ full_name: z.string() }) }),
});
export type PullRequestSlice = z.infer<typeof PullRequestSlice>;

/** What fetchPullRequest needs of a client: Probot's and @octokit/rest's both fit. */
export interface PullRequestOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

/** A pull request by number (an issue_comment payload's `issue.pull_request` carries only links). */
export async function fetchPullRequest(
  octokit: PullRequestOctokit,
  owner: string,
  repo: string,
  pullNumber: number,
): Promise<PullRequestSlice> {
  const route = 'GET /repos/{owner}/{repo}/pulls/{pull_number}';
  const { data } = await octokit.request(route, { owner, repo, pull_number: pullNumber });
  return PullRequestSlice.parse(data);
}
