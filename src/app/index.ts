import type { Probot } from 'probot';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { clampIssueBody, jobIdFor, type JobData } from '../queue/schema.js';
import { enqueueJob, isUnfinishedState, type FrognanoQueue } from '../queue/queue.js';
import { requestCancel } from '../queue/cancel.js';
import { claimOnce, withRedisLock } from '../queue/lock.js';
import { currentAttempt, forgetFreshAttempt, issueSlug, labelAttempt, nextAttempt, type IssueKey } from '../queue/attempts.js';
import { getUserPermission } from '../github/permissions.js';
import { fetchPullRequestOrigin, notBotPullRequestReason } from '../github/pullRequest.js';
import {
  CANCEL_REQUESTED,
  cachedStatusCommentId,
  summarizeStatus,
  updateStatusComment,
  upsertStatusComment,
  type StatusMeta,
  type StatusOctokit,
  type StatusState,
} from '../github/statusComment.js';
import { parseCommand, type Command } from './commands.js';
import { IssueCommentCreatedPayload, IssueLabeledPayload, isBot, isPullRequest } from './payloads.js';
import { statusOfJob } from './jobStatus.js';
import * as msg from './messages.js';
import {
  fetchPullRequest,
  followUpRefusedText,
  handleCommentFollowUp,
  handleReviewFollowUp,
  pullRequestCommand,
  ReviewSubmittedPayload,
  roundBusyText,
  roundStatusText,
  type PullRequestSlice,
} from './followUp.js';
import type { PermissionOctokit } from '../github/permissions.js';
import { guidanceFrom, isGuidanceRequest } from './guidance.js';

export const DEFAULT_LABEL = 'frognano';
/** How long a handled delivery/comment is remembered, so redeliveries do nothing. */
const HANDLED_TTL_SECONDS = 7 * 24 * 3600;

export interface AppDeps {
  queue: FrognanoQueue;
  /** Plain Redis connection for attempts, locks, status-comment cache and cancel requests. */
  redis: Redis;
  /** Trigger label (env FROGNANO_LABEL); compared case-insensitively, like GitHub does. */
  label?: string;
  /** Clock, injectable for tests. */
  now?: () => Date;
}

type Log = Probot['log'];

export function labelFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.FROGNANO_LABEL?.trim() || DEFAULT_LABEL;
}

/** The Probot application: label and comment triggers. */
export function createFrognanoApp(deps: AppDeps) {
  const label = deps.label ?? DEFAULT_LABEL;
  const now = deps.now ?? (() => new Date());
  const { queue, redis } = deps;

  return (app: Probot): void => {
    app.on('issues.labeled', async (context) => {
      const p = parse(IssueLabeledPayload, context.payload, app.log, context.id, 'issues.labeled');
      if (!p) return;
      if (p.label.name.toLowerCase() !== label.toLowerCase()) return;
      const log = app.log.child({ delivery: context.id, issue: `${p.repository.owner.login}/${p.repository.name}#${p.issue.number}` });
      if (isBot(p.sender)) return void log.info(`ignoring label added by bot ${p.sender.login}`);
      if (isPullRequest(p.issue)) return void log.info('ignoring label on a pull request');
      if (p.issue.state !== 'open') return void log.info('ignoring label on a closed issue');

      const octokit = context.octokit as unknown as StatusOctokit;
      const key = issueKey(p);
      const perm = await getUserPermission(octokit, key.owner, key.repo, p.sender.login);
      if (!perm.allowed) return refuseOutsider(octokit, key, msg.refusalText(p.sender.login, perm.role, 'label', label), log.child({ user: p.sender.login, role: perm.role }));

      await withRedisLock(redis, `frognano:issue-lock:${issueSlug(key)}`, async () => {
        const { attempt, fresh } = await labelAttempt(redis, key);
        const jobId = jobIdFor({ ...key, attempt });
        const existing = await queue.getJob(jobId);
        if (existing || !fresh) {
          // Redelivery or a second label while it runs: nothing to do. After an attempt ended (finished,
          // cancelled or expired), re-running takes an explicit `/frognano retry`; the status comment says so.
          const state = existing ? await existing.getState() : 'gone';
          log.info({ jobId, state }, 'label: this issue already has an attempt; not enqueuing again');
          return;
        }
        const data = jobData(p, key, attempt, 'label', context.id, now());
        await announceQueued(octokit, key, p.issue.html_url, attempt, p.sender.login, log);
        let enqueued;
        try {
          enqueued = await enqueueJob(queue, data);
        } catch (err) {
          await forgetFreshAttempt(redis, key); // let GitHub's redelivery start it
          throw err;
        }
        const { created, job } = enqueued;
        log.info({ jobId: job.id, created }, 'label: enqueued');
      });
    });

    // A review on the bot's pull request that contains /frognano asks for a follow-up round (src/app/followUp.ts).
    app.on('pull_request_review.submitted', async (context) => {
      const p = parse(ReviewSubmittedPayload, context.payload, app.log, context.id, 'pull_request_review.submitted');
      if (!p) return;
      const log = app.log.child({ delivery: context.id, pr: `${p.repository.owner.login}/${p.repository.name}#${p.pull_request.number}` });
      const decision = await handleReviewFollowUp({ queue, redis, now, log }, context.octokit as unknown as StatusOctokit & PermissionOctokit, p, context.id);
      if (decision.action === 'ignored') log.debug({ why: decision.why }, 'review: no follow-up');
      else log.info({ decision }, 'review: follow-up');
    });

    app.on('issue_comment.created', async (context) => {
      const p = parse(IssueCommentCreatedPayload, context.payload, app.log, context.id, 'issue_comment.created');
      if (!p) return;
      if (isBot(p.comment.user) || isBot(p.sender)) return; // includes our own comments
      const command = parseCommand(p.comment.body);
      if (!command) return;
      const key = issueKey(p);
      const log = app.log.child({ delivery: context.id, issue: issueSlug(key), command: command.kind });
      const claimKey = `frognano:comment:${issueSlug(key)}:${p.comment.id}`;
      if (!(await claimOnce(redis, claimKey, HANDLED_TTL_SECONDS))) return void log.info('comment already handled (redelivery)');
      try {
        await handleCommand(context.octokit as unknown as StatusOctokit, p, key, command, context.id, log);
      } catch (err) {
        await redis.del(claimKey); // let GitHub's redelivery try again
        throw err;
      }
    });
  };

  async function handleCommand(
    octokit: StatusOctokit,
    p: IssueCommentCreatedPayload,
    key: IssueKey,
    command: Command,
    deliveryId: string,
    log: Log,
  ): Promise<void> {
    const user = p.comment.user.login;
    let pr: PullRequestSlice | undefined;
    if (isPullRequest(p.issue)) {
      // Anyone can comment on any pull request: only frognano's own are worth an answer.
      pr = await fetchPullRequest(octokit as StatusOctokit & PermissionOctokit, key.owner, key.repo, key.issueNumber);
      const notOurs = notBotPullRequestReason(pr);
      if (notOurs) return void log.info(`ignoring a command on a pull request: ${notOurs}`);
    }
    const perm = await getUserPermission(octokit, key.owner, key.repo, user);
    if (!perm.allowed) return refuseOutsider(octokit, key, msg.refusalText(user, perm.role, 'command', label), log.child({ user, role: perm.role }));

    await octokit
      .request('POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions', {
        owner: key.owner,
        repo: key.repo,
        comment_id: p.comment.id,
        content: 'eyes',
      })
      .catch((err: unknown) => log.warn({ err }, 'could not add the eyes reaction'));

    if (pr) return handlePullRequestComment(octokit, p, key, pr, deliveryId, log);
    switch (command.kind) {
      case 'help':
        // `/frognano <what to do>` on an issue: an attempt with the writer's guidance (busy if one is running).
        if (isGuidanceRequest(command, p.comment.body)) return handleRetry(octokit, p, key, deliveryId, log, guidanceFrom(p.comment.body));
        return void (await comment(octokit, key, msg.helpText(label, command.unknown)));
      case 'status':
        return handleStatus(octokit, key, p.issue.html_url, user);
      case 'retry':
        return handleRetry(octokit, p, key, deliveryId, log, guidanceFrom(p.comment.body));
      case 'cancel':
        return handleCancel(octokit, key, p.issue.html_url, user, log);
    }
  }

  /** On the bot's pull request: status and cancel act on its current round; anything else asks for a round. */
  async function handlePullRequestComment(octokit: StatusOctokit, p: IssueCommentCreatedPayload, key: IssueKey, pr: PullRequestSlice, deliveryId: string, log: Log): Promise<void> {
    const command = pullRequestCommand(p.comment.body);
    switch (command?.kind) {
      case 'status':
        return handleStatus(octokit, key, p.issue.html_url, p.comment.user.login, true);
      case 'cancel':
        return handleCancel(octokit, key, p.issue.html_url, p.comment.user.login, log);
      case 'followUp':
        break;
      default:
        return void (await comment(octokit, key, msg.helpText(label)));
    }
    const decision = await handleCommentFollowUp({ queue, redis, now, log }, octokit as StatusOctokit & PermissionOctokit, {
      owner: key.owner,
      repo: key.repo,
      installationId: p.installation.id,
      defaultBranch: p.repository.default_branch,
      pr,
      by: { login: p.comment.user.login, id: p.comment.user.id },
      body: p.comment.body ?? '',
      commentId: p.comment.id,
      deliveryId,
    });
    log.info({ decision }, 'pull request comment: follow-up');
    if (decision.action === 'ignored') return void (await comment(octokit, key, followUpRefusedText(decision.why)));
    if (decision.action === 'busy') {
      const statusUrl = await refreshStatus(octokit, key, p.issue.html_url, decision.round);
      return void (await comment(octokit, key, roundBusyText(decision.round, statusUrl)));
    }
  }

  /**
   * Tells someone without write access why nothing happens, at most once per issue and pull request, ever:
   * otherwise anyone could make the bot comment (or react) as often as they like. The mark stays in Redis
   * beside the issue's other keys; it is dropped again only when the answer could not be posted.
   */
  async function refuseOutsider(octokit: StatusOctokit, key: IssueKey, text: string, log: Log): Promise<void> {
    const mark = outsiderAnsweredKey(key);
    if ((await redis.set(mark, new Date().toISOString(), 'NX')) !== 'OK') return void log.info('not answering: an outsider was already answered on this issue');
    log.info('answering an outsider (once per issue)');
    try {
      await comment(octokit, key, text);
    } catch (err) {
      await redis.del(mark);
      throw err;
    }
  }

  /** On the bot's pull request the "attempts" are its follow-up rounds, and the reply says so. */
  async function handleStatus(octokit: StatusOctokit, key: IssueKey, issueUrl: string | undefined, user: string, onPullRequest = false): Promise<void> {
    const reply = onPullRequest ? roundStatusText : (a: number | null, s: string | null, u: string | undefined) => msg.statusReplyText(a, s, u, label);
    const attempt = await currentAttempt(redis, key);
    if (attempt === null) return void (await comment(octokit, key, `@${user} ${reply(null, null, undefined)}`));
    const job = await queue.getJob(jobIdFor({ ...key, attempt }));
    const state = job ? await statusOfJob(queue, redis, job) : null;
    const statusUrl = state ? await refreshStatus(octokit, key, issueUrl, attempt) : undefined;
    const summary = state ? summarizeStatus(state, onPullRequest ? attempt : undefined) : null;
    await comment(octokit, key, `@${user} ${reply(attempt, summary, statusUrl)}`);
  }

  async function handleRetry(octokit: StatusOctokit, p: IssueCommentCreatedPayload, key: IssueKey, deliveryId: string, log: Log, guidance = ''): Promise<void> {
    if (p.issue.state !== 'open') return void (await comment(octokit, key, msg.closedIssueText()));
    const outcome = await withRedisLock(redis, `frognano:issue-lock:${issueSlug(key)}`, async () => {
      const cur = await currentAttempt(redis, key);
      if (cur !== null) {
        const job = await queue.getJob(jobIdFor({ ...key, attempt: cur }));
        if (job && isUnfinishedState(await job.getState())) {
          const state = await statusOfJob(queue, redis, job);
          return { kind: 'busy' as const, attempt: cur, summary: state ? summarizeStatus(state) : 'in progress' };
        }
      }
      const attempt = await nextAttempt(redis, key);
      const data = { ...jobData(p, key, attempt, 'comment', deliveryId, now(), p.comment.id), ...(guidance ? { guidance } : {}) };
      const statusUrl = await announceQueued(octokit, key, p.issue.html_url, attempt, p.comment.user.login, log);
      const { created, job } = await enqueueJob(queue, data);
      log.info({ jobId: job.id, created, attempt }, 'retry: enqueued');
      return { kind: 'queued' as const, attempt, summary: '', statusUrl };
    });
    if (outcome.kind === 'busy') {
      const statusUrl = await refreshStatus(octokit, key, p.issue.html_url, outcome.attempt);
      return void (await comment(octokit, key, msg.busyText(outcome.attempt, outcome.summary, statusUrl)));
    }
    await comment(octokit, key, msg.retryStartedText(outcome.attempt, outcome.statusUrl));
  }

  async function handleCancel(octokit: StatusOctokit, key: IssueKey, issueUrl: string | undefined, user: string, log: Log): Promise<void> {
    const attempt = await currentAttempt(redis, key);
    if (attempt === null) return void (await comment(octokit, key, msg.nothingToCancelText(null)));
    const jobId = jobIdFor({ ...key, attempt });
    const job = await queue.getJob(jobId);
    if (!job) return void (await comment(octokit, key, msg.nothingToCancelText(attempt)));
    const state = await job.getState();
    if (!isUnfinishedState(state)) {
      const st = await statusOfJob(queue, redis, job);
      return void (await comment(octokit, key, msg.nothingToCancelText(attempt, st ? summarizeStatus(st) : undefined)));
    }
    if (state !== 'active') {
      try {
        await job.remove();
        log.info({ jobId }, 'cancel: removed queued job');
        // One message: the status comment says it was cancelled, and by whom (the 👀 acknowledged the command).
        await updateStatusComment(octokit, redis, key, async () => ({
          state: { kind: 'cancelled', by: user },
          meta: metaFor(key, attempt, job.data.triggeredBy.login, !!job.data.followUp),
        }));
        return;
      } catch (err) {
        // A runner took (locked) it between our read and the removal: signal it instead.
        log.info({ jobId, err: String(err) }, 'cancel: job was picked up meanwhile; signalling the runner');
      }
    }
    // The status comment shows the request until the runner stops, then says "cancelled": no second message.
    await requestCancel(redis, jobId, user);
    await refreshStatus(octokit, key, issueUrl, attempt);
  }

  /**
   * Writes "queued" before the job exists, so it is the first thing a maintainer sees even when a runner starts
   * at once (the runner then edits this comment). The place in line is counted before the job joins it. The job
   * matters more than the comment: a failed write is logged, and the runner writes the status when it starts.
   */
  async function announceQueued(octokit: StatusOctokit, key: IssueKey, issueUrl: string | undefined, attempt: number, triggeredBy: string, log: Log): Promise<string | undefined> {
    try {
      const position = (await queue.getJobCountByTypes('waiting', 'prioritized')) + 1;
      const res = await upsertStatusComment(octokit, redis, key, { kind: 'queued', position }, metaFor(key, attempt, triggeredBy));
      return res.url ?? (issueUrl ? `${issueUrl}#issuecomment-${res.id}` : undefined);
    } catch (err) {
      log.warn({ err }, 'could not write the status comment');
      return undefined;
    }
  }

  /**
   * Rewrites the status comment from the job's live state, read under the issue's status lock.
   * The app only writes the states it owns — queued, cancelled, a cancel request on a running job,
   * and failures (a crashed runner cannot report its own). Running and finished-with-result comments
   * belong to the runner, which knows more (turns, summary), so they are left as they are.
   * Returns a link to the status comment either way, when one exists.
   */
  async function refreshStatus(octokit: StatusOctokit, key: IssueKey, issueUrl: string | undefined, attempt: number, triggeredBy?: string) {
    const res = await updateStatusComment(octokit, redis, key, async () => {
      const job = await queue.getJob(jobIdFor({ ...key, attempt }));
      if (!job) return null;
      const state = await statusOfJob(queue, redis, job);
      if (!state || !appOwns(state)) return null;
      return { state, meta: metaFor(key, attempt, triggeredBy ?? job.data.triggeredBy.login, !!job.data.followUp) };
    });
    if (res?.url) return res.url;
    const id = res?.id ?? (await cachedStatusCommentId(redis, key));
    return id && issueUrl ? `${issueUrl}#issuecomment-${id}` : undefined;
  }

  function appOwns(state: StatusState): boolean {
    if (state.kind === 'running') return (state.note ?? '').startsWith(CANCEL_REQUESTED);
    return state.kind === 'queued' || state.kind === 'failed' || state.kind === 'cancelled';
  }

  /** On the bot's pull request the attempt number is a follow-up round: the comment says "round N". */
  function metaFor(key: IssueKey, attempt: number, triggeredBy?: string, followUp = false): StatusMeta {
    const base = { jobId: jobIdFor({ ...key, attempt }), triggeredBy, updatedAt: now() };
    return followUp ? { ...base, round: attempt } : { ...base, attempt };
  }
}

/** Set once an outsider was answered on this issue (no expiry, like the attempt counter). */
export function outsiderAnsweredKey(key: IssueKey): string {
  return `frognano:outsider-answered:${issueSlug(key)}`;
}

function issueKey(p: { repository: { owner: { login: string }; name: string }; issue: { number: number } }): IssueKey {
  return { owner: p.repository.owner.login, repo: p.repository.name, issueNumber: p.issue.number };
}

function jobData(
  p: IssueLabeledPayload | IssueCommentCreatedPayload,
  key: IssueKey,
  attempt: number,
  trigger: 'label' | 'comment',
  deliveryId: string,
  at: Date,
  commentId?: number,
): JobData {
  const by = 'comment' in p ? p.comment.user : p.sender;
  return {
    installationId: p.installation.id,
    owner: key.owner,
    repo: key.repo,
    issueNumber: key.issueNumber,
    title: p.issue.title.slice(0, 1024),
    body: clampIssueBody(p.issue.body),
    defaultBranch: p.repository.default_branch,
    triggeredBy: { login: by.login, id: by.id },
    attempt,
    trigger,
    ...(commentId ? { commentId } : {}),
    deliveryId: deliveryId.slice(0, 100),
    enqueuedAt: at.toISOString(),
  };
}

async function comment(octokit: StatusOctokit, key: IssueKey, body: string): Promise<void> {
  await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
    owner: key.owner,
    repo: key.repo,
    issue_number: key.issueNumber,
    body,
  });
}

function parse<T>(schema: z.ZodType<T>, payload: unknown, log: Log, id: string, event: string): T | null {
  const r = schema.safeParse(payload);
  if (r.success) return r.data;
  log.warn({ delivery: id, event, issues: r.error.issues.slice(0, 5).map((i) => `${i.path.join('.')}: ${i.message}`) }, 'ignoring malformed webhook payload');
  return null;
}

export default createFrognanoApp;
