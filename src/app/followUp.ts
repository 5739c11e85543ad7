import { parseBotBranch } from '../github/botBranch.js';
import { postComment } from '../github/comments.js';
import { fetchIssueText } from '../github/issues.js';
import { notBotPullRequestReason } from '../github/pullRequest.js';
import type { PullRequestSlice } from '../github/pullRequestFetch.js';
import { getUserPermission } from '../github/permissions.js';
import { fetchReviewComments } from '../github/reviewFeedback.js';
import { upsertStatusComment, type IssueRef } from '../github/statusComment.js';
import { issueSlug, type IssueKey } from '../queue/attempts.js';
import type { WaitingAdded } from '../queue/asks.js';
import { enqueueFollowUp, pullRequestKey, type FollowUpRequest } from '../queue/followUps.js';
import { claimOnce, HANDLED_TTL_SECONDS } from '../queue/lock.js';
import { clampIssueBody, clampText, jobIdFor, MAX_FEEDBACK_CHARS, type InlineComment } from '../queue/schema.js';
import type { CiFix } from '../queue/ciFix.js';
import { cancelAttempt, replyStatus } from './attemptCommands.js';
import { autofixSwitch, onAutofixCommand } from './autofixCommand.js';
import { parseCommand } from './commands.js';
import type { Delivery, HandlerDeps } from './deps.js';
import { enqueue, positionForNewJob } from './enqueue.js';
import * as msg from './messages.js';
import type { IssueCommentCreatedPayload, ReviewSubmittedPayload } from './payloads.js';
import { refuseOverQuota } from './quotaGate.js';
import { refreshStatus } from './statusUpdates.js';
import { botKey } from '../queue/keys.js';
import { answerWaitingAsk, dropWaitingAsks, listWaitingAsks } from './waitingAsks.js';

/**
 * Follow-up rounds on the bot's own draft pull request: a writer's `/frognano <what to change>` comment, or a
 * submitted review that contains `/frognano` (in its text or an inline comment). Decides and enqueues; the
 * runner does the work (src/runner/followUp.ts).
 */

export type FollowUpDecision =
  | { action: 'queued'; round: number; jobId: string; statusUrl?: string }
  | { action: 'over_quota'; quota: string }
  /** A round is queued or running: the ask waits for the next one (src/app/waitingAsks.ts answers). */
  | { action: 'waiting'; round: number; added: WaitingAdded }
  /** A CI fix while the PR has a round unfinished or asks waiting: nothing queued. */
  | { action: 'busy'; round: number | null }
  | { action: 'ignored'; why: string };

/** Who asks for a round on which pull request: the same for a comment and a review. */
export interface RoundAsk {
  owner: string;
  repo: string;
  installationId: number;
  defaultBranch: string;
  pr: PullRequestSlice;
  by: { login: string; id: number };
  deliveryId: string;
}

/** A round request as the queue takes it: the ask, and what it says. */
export interface RoundRequest extends RoundAsk {
  source: 'comment' | 'review' | 'ci';
  /** A CI-fix round (src/app/ciFix.ts): the failing checks, and the line the status comment says about them. */
  ciFix?: CiFix;
  answering?: string;
  feedback: string;
  inlineComments?: InlineComment[];
  omittedComments?: number;
  reviewId?: number;
  commentId?: number;
}

/** Why this is not an open pull request the bot opened from one of its attempt branches, or null. */
export function notFollowUpTarget(pr: PullRequestSlice): string | null {
  const notOurs = notBotPullRequestReason(pr);
  if (notOurs) return notOurs;
  if (pr.state !== 'open') return 'the pull request is closed';
  if (!parseBotBranch(pr.head.ref)) return `branch ${pr.head.ref} is not one of frognano's attempt branches`;
  return null;
}

/** True when the text has a `/frognano` command line by the app's command rules (not in code or quotes). */
export function mentionsCommand(text: string | null | undefined): boolean {
  return parseCommand(text) !== null;
}

/**
 * Queues the next round for a pull request (one at a time). The status comment on the PR says "queued"
 * before the job exists, so it is the first thing a maintainer sees even when a runner starts at once.
 */
export async function requestFollowUp(deps: HandlerDeps, d: Delivery, o: RoundRequest): Promise<FollowUpDecision> {
  const origin = parseBotBranch(o.pr.head.ref);
  if (!origin) return { action: 'ignored', why: `branch ${o.pr.head.ref} is not a frognano branch` };
  if (!/^[0-9a-f]{40}$/.test(o.pr.head.sha))
    return { action: 'ignored', why: 'the pull request head is not a commit sha' };
  const prKey = pullRequestKey(o.owner, o.repo, o.pr.number);
  // Only a look here: an ask that waits for a running round is charged when the round that takes it starts.
  const refusal = await refuseOverQuota(deps, d, prKey);
  if (refusal) return { action: 'over_quota', quota: refusal.quota };
  const issue = await fetchIssueText(d.octokit, o.owner, o.repo, origin.issueNumber);
  const { now } = deps;
  const prRef: IssueRef = { owner: o.owner, repo: o.repo, issueNumber: o.pr.number };
  const req: FollowUpRequest = {
    installationId: o.installationId,
    owner: o.owner,
    repo: o.repo,
    issueNumber: origin.issueNumber,
    title: issue.title.slice(0, 1024),
    body: clampIssueBody(issue.body),
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
    ...(o.ciFix ? { ciFix: o.ciFix } : {}),
  };
  let statusUrl: string | undefined;
  const res = await enqueueFollowUp(
    deps.queue,
    deps.redis,
    req,
    async (round, merged) => {
      const jobId = jobIdFor({ ...pullRequestKey(o.owner, o.repo, o.pr.number), attempt: round });
      // The job matters more than the comment: a failed write is logged, and the runner writes the status when it starts.
      const position = await positionForNewJob(deps, { ...merged, followUp: { ...merged.followUp, round } });
      const meta = {
        round,
        jobId,
        triggeredBy: merged.triggeredBy.login,
        updatedAt: now(),
        ...(o.answering ? { answering: o.answering } : {}),
      };
      const up = await upsertStatusComment(d.octokit, deps.redis, prRef, { kind: 'queued', position }, meta).catch(
        (err: unknown) => void d.log.warn({ err }, 'could not write the status comment'),
      );
      statusUrl = up?.url;
    },
    (data) => enqueue(deps, data),
    (round) => refuseOverQuota(deps, d, prKey, round),
  );
  if (res.kind === 'over_quota') return { action: 'over_quota', quota: res.refusal.quota };
  if (res.kind === 'waiting') return { action: 'waiting', round: res.round, added: res.added };
  if (res.kind === 'busy') return { action: 'busy', round: res.round };
  return { action: 'queued', round: res.round, jobId: res.job.id!, statusUrl };
}

/**
 * `pull_request_review.submitted`: a review on the bot's PR whose text or inline comments contain
 * `/frognano`, by someone with write access, queues a round with the review's inline comments. Each
 * review is handled once (redeliveries do nothing).
 */
export async function handleReviewFollowUp(
  deps: HandlerDeps,
  d: Delivery,
  p: ReviewSubmittedPayload,
): Promise<FollowUpDecision> {
  const owner = p.repository.owner.login;
  const repo = p.repository.name;
  const { review, pull_request: pr } = p;
  const reviewer = review.user;
  if (!reviewer || reviewer.type === 'Bot' || reviewer.login.endsWith('[bot]'))
    return { action: 'ignored', why: 'the reviewer is not a person' };
  const notTarget = notFollowUpTarget(pr);
  if (notTarget) return { action: 'ignored', why: notTarget };

  // The command may sit in the review's text or only in one of its inline comments (a single-comment review).
  let inline: { comments: InlineComment[]; omitted: number } | null = null;
  if (!mentionsCommand(review.body)) {
    inline = await fetchReviewComments(d.octokit, { owner, repo, pullNumber: pr.number, reviewId: review.id });
    if (!inline.comments.some((c) => mentionsCommand(c.body)))
      return { action: 'ignored', why: 'the review does not contain /frognano' };
  }
  const claimKey = botKey('review', issueSlug(pullRequestKey(owner, repo, pr.number)), String(review.id));
  if (!(await claimOnce(deps.redis, claimKey, HANDLED_TTL_SECONDS)))
    return { action: 'ignored', why: 'review already handled (redelivery)' };
  try {
    const perm = await getUserPermission(d.octokit, owner, repo, reviewer.login);
    if (!perm.allowed)
      return { action: 'ignored', why: `@${reviewer.login} has ${perm.role} access; write access is needed` };
    inline ??= await fetchReviewComments(d.octokit, { owner, repo, pullNumber: pr.number, reviewId: review.id });
    const decision = await requestFollowUp(deps, d, {
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
      deliveryId: d.id,
    });
    const prKey = pullRequestKey(owner, repo, pr.number);
    if (decision.action === 'waiting') await answerWaitingAsk(d, prKey, decision.round, decision.added);
    return decision;
  } catch (err) {
    await deps.redis.del(claimKey); // let GitHub's redelivery try again
    throw err;
  }
}

/** What `/frognano …` means on the bot's pull request. */
export type PullRequestCommand =
  | { kind: 'status' }
  | { kind: 'cancel' }
  | { kind: 'help'; unknown?: string }
  | { kind: 'followUp' }
  | { kind: 'autofix' };

/**
 * On a pull request, `/frognano <anything but status|cancel|help>` asks for a round, and so does a bare
 * `/frognano` line in a comment that says more (`/frognano` then the request on the next lines).
 * `retry` is another round too. A comment that is only `/frognano` or `/frognano help` gets the help.
 */
export function pullRequestCommand(body: string | null | undefined): PullRequestCommand | null {
  const c = parseCommand(body);
  if (!c) return null;
  if (autofixSwitch(body) !== null) return { kind: 'autofix' };
  if (c.kind === 'status' || c.kind === 'cancel') return c;
  if (c.kind === 'retry' || c.unknown) return { kind: 'followUp' };
  if (/^\s*\/frognano\s+help\b/im.test(body ?? '')) return { kind: 'help' };
  const rest = (body ?? '').replace(/^\s*\/frognano\s*$/im, '').trim();
  return rest ? { kind: 'followUp' } : { kind: 'help' };
}

/** `/frognano <what to change>` from a writer in a comment on the bot's PR (permission already checked). */
export async function handleCommentFollowUp(
  deps: HandlerDeps,
  d: Delivery,
  o: RoundAsk & { body: string; commentId: number },
): Promise<FollowUpDecision> {
  const notTarget = notFollowUpTarget(o.pr);
  if (notTarget) return { action: 'ignored', why: notTarget };
  const feedback = o.body.replace(/^[ \t]*\/frognano(?:[ \t]+retry\b)?[ \t]*/im, '').trim();
  return requestFollowUp(deps, d, { ...o, source: 'comment', feedback });
}

type PullRequestCommandHandler = (deps: HandlerDeps, d: Delivery, c: CommandOnPullRequest) => Promise<void>;

/** A writer's command comment on the bot's pull request (permission already checked). */
export interface CommandOnPullRequest {
  p: IssueCommentCreatedPayload;
  key: IssueKey;
  pr: PullRequestSlice;
}

/** On the bot's pull request: status and cancel act on its current round; anything else asks for a round. */
const PULL_REQUEST_COMMANDS: Record<PullRequestCommand['kind'], PullRequestCommandHandler> = {
  status: async (deps, d, { p, key }) => {
    const waiting = msg.waitingAsksText(await listWaitingAsks(deps, key));
    await replyStatus(deps, d, key, p.issue.html_url, p.comment.user.login, true, waiting);
  },
  cancel: async (deps, d, { p, key }) => {
    // The asks go first: a round that stops on the cancel would otherwise start the next round from them.
    await dropWaitingAsks(deps, d, key);
    await cancelAttempt(deps, d, key, p.issue.html_url, p.comment.user.login);
  },
  help: async (deps, d, { key }) => postComment(d.octokit, key, msg.helpText(deps.label)),
  followUp: askForRound,
  autofix: (deps, d, { p, key }) => onAutofixCommand(deps, d, key, p.comment.body),
};

export async function onPullRequestCommand(deps: HandlerDeps, d: Delivery, c: CommandOnPullRequest): Promise<void> {
  const kind = pullRequestCommand(c.p.comment.body)?.kind ?? 'help';
  await PULL_REQUEST_COMMANDS[kind](deps, d, c);
}

async function askForRound(deps: HandlerDeps, d: Delivery, { p, key, pr }: CommandOnPullRequest): Promise<void> {
  const decision = await handleCommentFollowUp(deps, d, {
    owner: key.owner,
    repo: key.repo,
    installationId: p.installation.id,
    defaultBranch: p.repository.default_branch,
    pr,
    by: { login: p.comment.user.login, id: p.comment.user.id },
    body: p.comment.body ?? '',
    commentId: p.comment.id,
    deliveryId: d.id,
  });
  d.log.info({ decision }, 'pull request comment: follow-up');
  if (decision.action === 'ignored') {
    return void (await postComment(d.octokit, key, msg.followUpRefusedText(decision.why)));
  }
  if (decision.action === 'waiting') await answerWaitingAsk(d, key, decision.round, decision.added);
}
