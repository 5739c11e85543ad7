import { z } from 'zod';
import {
  MAX_DIFF_HUNK_CHARS,
  MAX_FEEDBACK_CHARS,
  MAX_INLINE_COMMENTS,
  clampText,
  type InlineComment,
} from '../queue/schema.js';
import type { PermissionOctokit } from './permissions.js';

const ReviewComment = z.object({
  body: z.string().nullable().optional(),
  path: z.string(),
  line: z.number().nullable().optional(),
  original_line: z.number().nullable().optional(),
  start_line: z.number().nullable().optional(),
  diff_hunk: z.string().nullable().optional(),
  user: z.object({ login: z.string(), type: z.string() }).nullable(),
});

/** A review's inline comments with their file, line and diff hunk, capped for the job payload. */
export async function fetchReviewComments(
  octokit: PermissionOctokit,
  o: { owner: string; repo: string; pullNumber: number; reviewId: number },
): Promise<{ comments: InlineComment[]; omitted: number }> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments', {
    owner: o.owner,
    repo: o.repo,
    pull_number: o.pullNumber,
    review_id: o.reviewId,
    per_page: 100,
  });
  const list = (Array.isArray(data) ? data : []).flatMap((raw) => {
    const c = ReviewComment.safeParse(raw);
    return c.success ? [c.data] : [];
  });
  const comments = list.slice(0, MAX_INLINE_COMMENTS).map((c): InlineComment => ({
    author: c.user?.login ?? 'ghost',
    body: clampText(c.body, MAX_FEEDBACK_CHARS / 4, 'comment'),
    path: c.path.slice(0, 1000),
    line: c.line ?? c.original_line ?? null,
    startLine: c.start_line ?? null,
    diffHunk: clampHunk(c.diff_hunk ?? ''),
  }));
  return { comments, omitted: list.length - comments.length };
}

/** GitHub's hunk ends at the commented line; keep that end when cutting. */
function clampHunk(hunk: string): string {
  if (hunk.length <= MAX_DIFF_HUNK_CHARS) return hunk;
  return `…\n${hunk.slice(hunk.length - MAX_DIFF_HUNK_CHARS)}`;
}
