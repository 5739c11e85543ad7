import type { Redis } from 'ioredis';
import { z } from 'zod';
import { parseBotBranch } from '../github/botBranch.js';
import { notBotPullRequestReason } from '../github/pullRequest.js';
import { getUserPermission, type PermissionOctokit } from '../github/permissions.js';
import { fetchReviewComments } from '../github/reviewFeedback.js';
import { upsertStatusComment, type IssueRef, type StatusOctokit } from '../github/statusComment.js';
import { issueSlug } from '../queue/attempts.js';
import { enqueueFollowUp, pullRequestKey, type FollowUpRequest } from '../queue/followUps.js';
import { claimOnce } from '../queue/lock.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { clampIssueBody, clampText, jobIdFor, MAX_FEEDBACK_CHARS, type InlineComment } from '../queue/schema.js';
import { parseCommand } from './commands.js';

/**
 * Follow-up rounds on the bot's own draft pull request: a writer's `/frognano <what to change>` comment, or a
 * submitted review that contains `/frognano` (in its text or an inline comment). Decides and enqueues; the
 * runner does the work (src/runner/followUp.ts).
 */

const HANDLED_TTL_SECONDS = 7 * 24 * 3600;

const User = z.object({ login: z.string().min(1), id: z.number().int().nonnegative(), type: z.string() });
const PullRequest = z.object({
  number: z.number().int().positive(),
  state: z.string(),
  html_url: z.string().optional(),
  user: z.object({ type: z.string().optional() }).nullable().optional(),
  head: z.object({ ref: z.string(), sha: z.string(), repo: z.object({ full_name: z.string() }).nullable().optional() }),
  base: z.object({ ref: z.string(), repo: z.object({ full_name: z.string() }) }),
});
export type PullRequestSlice = z.infer<typeof PullRequest>;

export const ReviewSubmittedPayload = z.object({
  action: z.literal('submitted'),
  review: z.object({ id: z.number().int().positive(), body: z.string().nullable().optional(), state: z.string(), user: User.nullable() }),
  pull_request: PullRequest,
  repository: z.object({ name: z.string().min(1), owner: z.object({ login: z.string().min(1) }), default_branch: z.string().min(1) }),
  installation: z.object({ id: z.number().int().positive() }),
});
export type ReviewSubmittedPayload = z.infer<typeof ReviewSubmittedPayload>;

export type FollowUpDecision =
  | { action: 'queued'; round: number; jobId: string; statusUrl?: string }
  | { action: 'busy'; round: number; jobId: string }
  | { action: 'ignored'; why: string };

export interface FollowUpDeps {
  queue: FrognanoQueue;
  redis: Redis;
  now?: () => Date;
  log?: { warn(obj: object, msg: string): void };
}

type Octokit = StatusOctokit & PermissionOctokit;

/** Why this is not an open pull request the bot opened from one of its attempt branches, or null. */
export function notFollowUpTarget(pr: PullRequestSlice): string | null {
  const notOurs = notBotPullRequestReason(pr);
  if (notOurs) return notOurs;
  if (pr.state !== 'open') return 'the pull request is closed';
  if (!parseBotBranch(pr.head.ref)) return `branch ${pr.head.ref} is not one of frognano's attempt branches`;
  return null;
}

/** The reply when a writer's request on the bot's PR cannot start a round. */
export function followUpRefusedText(why: string): string {
  return `I did not start a follow-up round: ${why.replace(/[`@]/g, '')}.`;
}

/** `/frognano status` on the bot's pull request. */
export function roundStatusText(round: number | null, summary: string | null, statusUrl?: string): string {
  if (round === null) return 'No follow-up round has run on this pull request yet. Comment `/frognano <what to change>`, or submit a review that contains `/frognano`, to start one.';
  if (summary === null) return `Round ${round} finished long enough ago that its record has expired.`;
  return `Round ${round}: ${summary}.${statusUrl ? ` Details are in the [status comment](${statusUrl}).` : ''}`;
}

export function roundBusyText(round: number, statusUrl?: string): string {
  const link = statusUrl ? ` ([status](${statusUrl}))` : '';
  return `Round ${round} on this pull request is still queued or running${link}, so I did not start another. Comment \`/frognano cancel\` first to replace it.`;
}

/** True when the text has a `/frognano` command line by the app's command rules (not in code or quotes). */
export function mentionsCommand(text: string | null | undefined): boolean {
  return parseCommand(text) !== null;
}

/** The pull request behind an issue_comment payload (`issue.pull_request` carries only links). */
export async function fetchPullRequest(octokit: Octokit, owner: string, repo: string, pullNumber: number): Promise<PullRequestSlice> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner, repo, pull_number: pullNumber });
  return PullRequest.parse(data);
}

/**
 * Queues the next round for a pull request (one at a time). The status comment on the PR says "queued"
 * before the job exists, so it is the first thing a maintainer sees even when a runner starts at once.
 */
export async function requestFollowUp(
  deps: FollowUpDeps,
  octokit: Octokit,
  o: {
    owner: string;
    repo: string;
    installationId: number;
    defaultBranch: string;
    pr: PullRequestSlice;
    by: { login: string; id: number };
    source: 'comment' | 'review';
    feedback: string;
    inlineComments?: InlineComment[];
    omittedComments?: number;
    reviewId?: number;
    commentId?: number;
    deliveryId: string;
  },
): Promise<FollowUpDecision> {
  const origin = parseBotBranch(o.pr.head.ref);
  if (!origin) return { action: 'ignored', why: `branch ${o.pr.head.ref} is not a frognano branch` };
  if (!/^[0-9a-f]{40}$/.test(o.pr.head.sha)) return { action: 'ignored', why: 'the pull request head is not a commit sha' };
  const { data: issue } = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
    owner: o.owner,
    repo: o.repo,
    issue_number: origin.issueNumber,
  });
  const now = deps.now ?? (() => new Date());
  const prRef: IssueRef = { owner: o.owner, repo: o.repo, issueNumber: o.pr.number };
  const req: FollowUpRequest = {
    installationId: o.installationId,
    owner: o.owner,
    repo: o.repo,
    issueNumber: origin.issueNumber,
    title: String(issue?.title ?? '').slice(0, 1024),
    body: clampIssueBody(issue?.body as string | null | undefined),
    defaultBranch: o.defaultBranch,
    triggeredBy: { login: o.by.login, id: o.by.id },
    attempt: origin.attempt,
    trigger: o.source,
    ...(o.commentId ? { commentId: o.commentId } : {}),
    deliveryId: o.deliveryId.slice(0, 100),
    enqueuedAt: now().toISOString(),
    followUp: {
      pullNumber: o.pr.number,
      headBranch: o.pr.head.ref,
      headSha: o.pr.head.sha,
      baseBranch: o.pr.base.ref,
      feedback: clampText(o.feedback, MAX_FEEDBACK_CHARS, 'feedback'),
      inlineComments: o.inlineComments ?? [],
      omittedComments: o.omittedComments ?? 0,
      source: o.source,
      ...(o.reviewId ? { reviewId: o.reviewId } : {}),
    },
  };
  let statusUrl: string | undefined;
  const res = await enqueueFollowUp(deps.queue, deps.redis, req, async (round) => {
    const jobId = jobIdFor({ ...pullRequestKey(o.owner, o.repo, o.pr.number), attempt: round });
    // The job matters more than the comment: a failed write is logged, and the runner writes the status when it starts.
    const position = (await deps.queue.getJobCountByTypes('waiting', 'prioritized')) + 1;
    const up = await upsertStatusComment(octokit, deps.redis, prRef, { kind: 'queued', position }, { round, jobId, triggeredBy: o.by.login, updatedAt: now() }).catch(
      (err: unknown) => void deps.log?.warn({ err }, 'could not write the status comment'),
    );
    statusUrl = up?.url;
  });
  if (res.kind === 'busy') return { action: 'busy', round: res.round, jobId: res.job.id! };
  return { action: 'queued', round: res.round, jobId: res.job.id!, statusUrl };
}

/**
 * `pull_request_review.submitted`: a review on the bot's PR whose text or inline comments contain
 * `/frognano`, by someone with write access, queues a round with the review's inline comments. Each
 * review is handled once (redeliveries do nothing).
 */
export async function handleReviewFollowUp(deps: FollowUpDeps, octokit: Octokit, p: ReviewSubmittedPayload, deliveryId: string): Promise<FollowUpDecision> {
  const owner = p.repository.owner.login;
  const repo = p.repository.name;
  const { review, pull_request: pr } = p;
  const reviewer = review.user;
  if (!reviewer || reviewer.type === 'Bot' || reviewer.login.endsWith('[bot]')) return { action: 'ignored', why: 'the reviewer is not a person' };
  const notTarget = notFollowUpTarget(pr);
  if (notTarget) return { action: 'ignored', why: notTarget };

  // The command may sit in the review's text or only in one of its inline comments (a single-comment review).
  let inline: { comments: InlineComment[]; omitted: number } | null = null;
  if (!mentionsCommand(review.body)) {
    inline = await fetchReviewComments(octokit, { owner, repo, pullNumber: pr.number, reviewId: review.id });
    if (!inline.comments.some((c) => mentionsCommand(c.body))) return { action: 'ignored', why: 'the review does not contain /frognano' };
  }
  const claimKey = `frognano:review:${issueSlug(pullRequestKey(owner, repo, pr.number))}:${review.id}`;
  if (!(await claimOnce(deps.redis, claimKey, HANDLED_TTL_SECONDS))) return { action: 'ignored', why: 'review already handled (redelivery)' };
  try {
    const perm = await getUserPermission(octokit, owner, repo, reviewer.login);
    if (!perm.allowed) return { action: 'ignored', why: `@${reviewer.login} has ${perm.role} access; write access is needed` };
    inline ??= await fetchReviewComments(octokit, { owner, repo, pullNumber: pr.number, reviewId: review.id });
    return await requestFollowUp(deps, octokit, {
      owner,
      repo,
      installationId: p.installation.id,
      defaultBranch: p.repository.default_branch,
      pr,
      by: { login: reviewer.login, id: reviewer.id },
      source: 'review',
      feedback: review.body ?? '',
      inlineComments: inline.comments,
      omittedComments: inline.omitted,
      reviewId: review.id,
      deliveryId,
    });
  } catch (err) {
    await deps.redis.del(claimKey); // let GitHub's redelivery try again
    throw err;
  }
}

/** What `/frognano …` means on the bot's pull request. */
export type PullRequestCommand = { kind: 'status' } | { kind: 'cancel' } | { kind: 'help'; unknown?: string } | { kind: 'followUp' };

/**
 * On a pull request, `/frognano <anything but status|cancel|help>` asks for a round, and so does a bare
 * `/frognano` line in a comment that says more (`/frognano` then the request on the next lines).
 * `retry` is another round too. A comment that is only `/frognano` or `/frognano help` gets the help.
 */
export function pullRequestCommand(body: string | null | undefined): PullRequestCommand | null {
  const c = parseCommand(body);
  if (!c) return null;
  if (c.kind === 'status' || c.kind === 'cancel') return c;
  if (c.kind === 'retry' || c.unknown) return { kind: 'followUp' };
  if (/^\s*\/frognano\s+help\b/im.test(body ?? '')) return { kind: 'help' };
  const rest = (body ?? '').replace(/^\s*\/frognano\s*$/im, '').trim();
  return rest ? { kind: 'followUp' } : { kind: 'help' };
}

/** `/frognano <what to change>` from a writer in a comment on the bot's PR (permission already checked). */
export async function handleCommentFollowUp(
  deps: FollowUpDeps,
  octokit: Octokit,
  o: {
    owner: string;
    repo: string;
    installationId: number;
    defaultBranch: string;
    pr: PullRequestSlice;
    by: { login: string; id: number };
    body: string;
    commentId: number;
    deliveryId: string;
  },
): Promise<FollowUpDecision> {
  const notTarget = notFollowUpTarget(o.pr);
  if (notTarget) return { action: 'ignored', why: notTarget };
  const feedback = o.body.replace(/^[ \t]*\/frognano(?:[ \t]+retry\b)?[ \t]*/im, '').trim();
  return requestFollowUp(deps, octokit, { ...o, source: 'comment', feedback });
}
