import type { IssueRef, StatusOctokit } from './statusComment.js';

/** Plain issue and pull request comments, and reactions to them (the status comment lives in statusComment.ts). */

/** A new comment on an issue or pull request. */
export async function postComment(octokit: StatusOctokit, ref: IssueRef, body: string): Promise<void> {
  await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
    owner: ref.owner,
    repo: ref.repo,
    issue_number: ref.issueNumber,
    body,
  });
}

/** Reacts to an issue comment (`eyes`: the bot saw a command). */
export async function addCommentReaction(
  octokit: StatusOctokit,
  o: { owner: string; repo: string; commentId: number },
  content: 'eyes' | '+1' | 'rocket',
): Promise<void> {
  await octokit.request('POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions', {
    owner: o.owner,
    repo: o.repo,
    comment_id: o.commentId,
    content,
  });
}
