import { z } from 'zod';
import type { Probot } from 'probot';
import { PullRequestSlice } from '../github/pullRequestFetch.js';

/**
 * The slices of GitHub webhook payloads the app relies on. Anything that does not match is logged
 * and ignored instead of failing deep inside a handler.
 */
const User = z.object({ login: z.string().min(1), id: z.number().int().nonnegative(), type: z.string() });
export const Repository = z.object({
  name: z.string().min(1),
  owner: z.object({ login: z.string().min(1) }),
  default_branch: z.string().min(1),
});
const Issue = z.object({
  number: z.number().int().positive(),
  title: z.string(),
  body: z.string().nullable().optional(),
  state: z.string(),
  html_url: z.string().optional(),
  pull_request: z.unknown().optional(),
});
export const Installation = z.object({ id: z.number().int().positive() });

export const IssueLabeledPayload = z.object({
  action: z.literal('labeled'),
  label: z.object({ name: z.string() }),
  issue: Issue,
  repository: Repository,
  sender: User,
  installation: Installation,
});
export type IssueLabeledPayload = z.infer<typeof IssueLabeledPayload>;

export const IssueCommentCreatedPayload = z.object({
  action: z.literal('created'),
  comment: z.object({
    id: z.number().int().positive(),
    body: z.string().nullable(),
    user: User,
    html_url: z.string().optional(),
  }),
  issue: Issue,
  repository: Repository,
  sender: User,
  installation: Installation,
});
export type IssueCommentCreatedPayload = z.infer<typeof IssueCommentCreatedPayload>;

/** A submitted review on a pull request (the review's user is null when the account was deleted). */
export const ReviewSubmittedPayload = z.object({
  action: z.literal('submitted'),
  review: z.object({
    id: z.number().int().positive(),
    body: z.string().nullable().optional(),
    state: z.string(),
    user: User.nullable(),
  }),
  pull_request: PullRequestSlice,
  repository: Repository,
  installation: Installation,
});
export type ReviewSubmittedPayload = z.infer<typeof ReviewSubmittedPayload>;

/** GitHub Apps act as `name[bot]` users of type Bot; never react to them (including ourselves). */
export function isBot(user: { login: string; type: string }): boolean {
  return user.type === 'Bot' || user.login.endsWith('[bot]');
}

export function isPullRequest(issue: { pull_request?: unknown }): boolean {
  return issue.pull_request !== undefined && issue.pull_request !== null;
}

/** The payload's slice, or null (logged) when it does not match: a malformed delivery is ignored, not a crash. */
export function parsePayload<T>(
  schema: z.ZodType<T>,
  payload: unknown,
  log: Probot['log'],
  id: string,
  event: string,
): T | null {
  const r = schema.safeParse(payload);
  if (r.success) return r.data;
  const issues = r.error.issues.slice(0, 5).map((i) => `${i.path.join('.')}: ${i.message}`);
  log.warn({ delivery: id, event, issues }, 'ignoring malformed webhook payload');
  return null;
}
