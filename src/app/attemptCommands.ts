import { postComment } from '../github/comments.js';
import { summarizeStatus, updateStatusComment } from '../github/statusComment.js';
import { currentAttempt, issueSlug, nextAttempt, type IssueKey } from '../queue/attempts.js';
import { requestCancel } from '../queue/cancel.js';
import { withRedisLock } from '../queue/lock.js';
import { isUnfinishedState } from '../queue/queue.js';
import { jobIdFor } from '../queue/schema.js';
import type { Delivery, HandlerDeps } from './deps.js';
import { enqueue } from './enqueue.js';
import { jobData } from './jobData.js';
import { statusOfJob } from './jobStatus.js';
import * as msg from './messages.js';
import type { IssueCommentCreatedPayload } from './payloads.js';
import { refuseOverQuota } from './quotaGate.js';
import { announceQueued, metaFor, refreshStatus } from './statusUpdates.js';
import { botKey } from '../queue/keys.js';

/**
 * `/frognano status|retry|cancel`: what they do to an issue's current attempt. On the bot's pull request
 * the "attempts" are its follow-up rounds, so status and cancel serve there too.
 */

/** On the bot's pull request the reply speaks of rounds. */
export async function replyStatus(
  deps: HandlerDeps,
  d: Delivery,
  key: IssueKey,
  issueUrl: string | undefined,
  user: string,
  onPullRequest = false,
  /** More for the reply (the asks waiting for a pull request's next round). */
  more = '',
): Promise<void> {
  const { queue, redis, label } = deps;
  const reply = onPullRequest
    ? msg.roundStatusText
    : (a: number | null, s: string | null, u: string | undefined) => msg.statusReplyText(a, s, u, label);
  const attempt = await currentAttempt(redis, key);
  const tail = more ? `\n\n${more}` : '';
  if (attempt === null)
    return void (await postComment(d.octokit, key, `@${user} ${reply(null, null, undefined)}${tail}`));
  const job = await queue.getJob(jobIdFor({ ...key, attempt }));
  const state = job ? await statusOfJob(queue, redis, job, deps.fairShare) : null;
  const statusUrl = state ? await refreshStatus(deps, d.octokit, key, issueUrl, attempt) : undefined;
  const summary = state ? summarizeStatus(state, onPullRequest ? attempt : undefined) : null;
  await postComment(d.octokit, key, `@${user} ${reply(attempt, summary, statusUrl)}${tail}`);
}

/** A new attempt on an open issue, unless one is queued or running; `guidance` is the writer's words for the task. */
export async function startRetry(
  deps: HandlerDeps,
  d: Delivery,
  p: IssueCommentCreatedPayload,
  key: IssueKey,
  guidance = '',
): Promise<void> {
  if (p.issue.state !== 'open') return void (await postComment(d.octokit, key, msg.closedIssueText()));
  const { queue, redis } = deps;
  const outcome = await withRedisLock(redis, botKey('issue-lock', issueSlug(key)), async () => {
    const cur = await currentAttempt(redis, key);
    if (cur !== null) {
      const job = await queue.getJob(jobIdFor({ ...key, attempt: cur }));
      if (job && isUnfinishedState(await job.getState())) {
        const state = await statusOfJob(queue, redis, job, deps.fairShare);
        return { kind: 'busy' as const, attempt: cur, summary: state ? summarizeStatus(state) : 'in progress' };
      }
    }
    // Over quota: the refusal comment is the answer (once per period).
    // The attempt about to be queued holds its quota (the number is taken only once it is admitted).
    if (await refuseOverQuota(deps, d, key, (cur ?? 0) + 1)) return { kind: 'over_quota' as const };
    const attempt = await nextAttempt(redis, key);
    const base = jobData(p, key, attempt, 'comment', d.id, deps.now(), p.comment.id);
    const data = { ...base, ...(guidance ? { guidance } : {}) };
    const statusUrl = await announceQueued(deps, d.octokit, key, p.issue.html_url, data, d.log);
    const { created, job } = await enqueue(deps, data);
    d.log.info({ jobId: job.id, created, attempt }, 'retry: enqueued');
    return { kind: 'queued' as const, attempt, summary: '', statusUrl };
  });
  if (outcome.kind === 'over_quota') return;
  if (outcome.kind === 'busy') {
    const statusUrl = await refreshStatus(deps, d.octokit, key, p.issue.html_url, outcome.attempt);
    return void (await postComment(d.octokit, key, msg.busyText(outcome.attempt, outcome.summary, statusUrl)));
  }
  await postComment(d.octokit, key, msg.retryStartedText(outcome.attempt, outcome.statusUrl));
}

/** Withdraws a queued job, or asks the runner to stop a running one. */
export async function cancelAttempt(
  deps: HandlerDeps,
  d: Delivery,
  key: IssueKey,
  issueUrl: string | undefined,
  user: string,
): Promise<void> {
  const { queue, redis } = deps;
  const attempt = await currentAttempt(redis, key);
  if (attempt === null) return void (await postComment(d.octokit, key, msg.nothingToCancelText(null)));
  const jobId = jobIdFor({ ...key, attempt });
  const job = await queue.getJob(jobId);
  if (!job) return void (await postComment(d.octokit, key, msg.nothingToCancelText(attempt)));
  const state = await job.getState();
  if (!isUnfinishedState(state)) {
    const st = await statusOfJob(queue, redis, job, deps.fairShare);
    const text = msg.nothingToCancelText(attempt, st ? summarizeStatus(st) : undefined);
    return void (await postComment(d.octokit, key, text));
  }
  if (state !== 'active') {
    try {
      await job.remove();
      await deps.fairShare?.forget(jobId);
      d.log.info({ jobId }, 'cancel: removed queued job');
      // One message: the status comment says it was cancelled, and by whom (the 👀 acknowledged the command).
      await updateStatusComment(d.octokit, redis, key, async () => ({
        state: { kind: 'cancelled', by: user },
        meta: metaFor(deps, key, attempt, job.data.triggeredBy.login, !!job.data.followUp),
      }));
      return;
    } catch (err) {
      // A runner took (locked) it between our read and the removal: signal it instead.
      d.log.info({ jobId, err: String(err) }, 'cancel: job was picked up meanwhile; signalling the runner');
    }
  }
  // The status comment shows the request until the runner stops, then says "cancelled": no second message.
  await requestCancel(redis, jobId, user);
  await refreshStatus(deps, d.octokit, key, issueUrl, attempt);
}
