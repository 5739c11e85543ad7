import type { StatusOctokit } from './statusComment.js';

/**
 * An issue's title and body as the job payload takes them. Not validated: a missing field becomes empty
 * text, and the job schema clamps both.
 */
export async function fetchIssueText(
  octokit: StatusOctokit,
  owner: string,
  repo: string,
  issueNumber: number,
): Promise<{ title: string; body: string | null | undefined }> {
  const route = 'GET /repos/{owner}/{repo}/issues/{issue_number}';
  const { data: issue } = await octokit.request(route, { owner, repo, issue_number: issueNumber });
  return { title: String(issue?.title ?? ''), body: issue?.body as string | null | undefined };
}
