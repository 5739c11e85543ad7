import { z } from 'zod';
import { getUserPermission, type PermissionOctokit } from './permissions.js';

/**
 * The issue's discussion as the model may see it: comments by people with write access, oldest first.
 * Everyone else's words stay out (anyone can comment on a public issue, so their text could steer the
 * model); the caller says how many were left out. Bot comments (our status comment included) are dropped.
 */
export interface DiscussionComment {
  author: string;
  body: string;
  createdAt: string;
}

export interface Discussion {
  comments: DiscussionComment[];
  /** Comments by people without write access, and writers' comments past the caps. */
  leftOut: number;
}

const Comment = z.object({
  id: z.number(),
  body: z.string().nullable().optional(),
  created_at: z.string(),
  user: z.object({ login: z.string(), type: z.string() }).nullable(),
});

export const DISCUSSION_LIMITS = {
  /** Pages of 100 comments read at most. */
  maxPages: 5,
  /** Distinct authors whose permission is asked (one API call each). */
  maxAuthors: 30,
  maxComments: 30,
};

export function isBotUser(user: { login: string; type: string }): boolean {
  return user.type === 'Bot' || user.login.endsWith('[bot]');
}

export async function readDiscussion(
  octokit: PermissionOctokit,
  o: { owner: string; repo: string; issueNumber: number; exceptCommentIds?: number[] },
  limits = DISCUSSION_LIMITS,
): Promise<Discussion> {
  const all: z.infer<typeof Comment>[] = [];
  for (let page = 1; page <= limits.maxPages; page++) {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: o.owner,
      repo: o.repo,
      issue_number: o.issueNumber,
      per_page: 100,
      page,
    });
    const list = Array.isArray(data) ? data : [];
    for (const raw of list) {
      const c = Comment.safeParse(raw);
      if (c.success) all.push(c.data);
    }
    if (list.length < 100) break;
  }
  const skip = new Set(o.exceptCommentIds ?? []);
  const human = all.filter((c) => c.user && !isBotUser(c.user) && !skip.has(c.id) && (c.body ?? '').trim());
  human.sort((a, b) => a.created_at.localeCompare(b.created_at));

  const writer = new Map<string, boolean>();
  const comments: DiscussionComment[] = [];
  let leftOut = 0;
  for (const c of human) {
    const login = c.user!.login;
    const key = login.toLowerCase();
    if (!writer.has(key)) {
      // Past the cap, unknown authors count as left out rather than costing more API calls.
      writer.set(
        key,
        writer.size < limits.maxAuthors ? (await getUserPermission(octokit, o.owner, o.repo, login)).allowed : false,
      );
    }
    if (!writer.get(key) || comments.length >= limits.maxComments) {
      leftOut++;
      continue;
    }
    comments.push({ author: login, body: c.body ?? '', createdAt: c.created_at });
  }
  return { comments, leftOut };
}
