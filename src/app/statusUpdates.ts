import {
  CANCEL_REQUESTED,
  cachedStatusCommentId,
  updateStatusComment,
  upsertStatusComment,
  type StatusMeta,
  type StatusOctokit,
  type StatusState,
} from '../github/statusComment.js';
import type { IssueKey } from '../queue/attempts.js';
import { answeringText } from '../queue/ciFix.js';
import { jobIdFor, type JobData } from '../queue/schema.js';
import type { HandlerDeps, Log } from './deps.js';
import { positionForNewJob } from './enqueue.js';
import { statusOfJob } from './jobStatus.js';

/** The states of the status comment the app writes; the runner writes the rest. */

/**
 * Writes "queued" before the job exists, so it is the first thing a maintainer sees even when a runner starts
 * at once (the runner then edits this comment). The place in line is counted before the job joins it. The job
 * matters more than the comment: a failed write is logged, and the runner writes the status when it starts.
 */
export async function announceQueued(
  deps: HandlerDeps,
  octokit: StatusOctokit,
  key: IssueKey,
  issueUrl: string | undefined,
  data: JobData,
  log: Log,
): Promise<string | undefined> {
  try {
    const position = await positionForNewJob(deps, data);
    const meta = metaFor(deps, key, data.attempt, data.triggeredBy.login);
    const res = await upsertStatusComment(octokit, deps.redis, key, { kind: 'queued', position }, meta);
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
export async function refreshStatus(
  deps: HandlerDeps,
  octokit: StatusOctokit,
  key: IssueKey,
  issueUrl: string | undefined,
  attempt: number,
): Promise<string | undefined> {
  const { queue, redis } = deps;
  const res = await updateStatusComment(octokit, redis, key, async () => {
    const job = await queue.getJob(jobIdFor({ ...key, attempt }));
    if (!job) return null;
    const state = await statusOfJob(queue, redis, job, deps.fairShare);
    if (!state || !appOwns(state)) return null;
    const meta = metaFor(deps, key, attempt, job.data.triggeredBy.login, !!job.data.followUp);
    // A CI-fix round keeps saying which failing checks it answers, whoever rewrites the comment.
    return { state, meta: job.data.ciFix ? { ...meta, answering: answeringText(job.data.ciFix) } : meta };
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
export function metaFor(
  deps: HandlerDeps,
  key: IssueKey,
  attempt: number,
  triggeredBy?: string,
  followUp = false,
): StatusMeta {
  const base = { jobId: jobIdFor({ ...key, attempt }), triggeredBy, updatedAt: deps.now() };
  return followUp ? { ...base, round: attempt } : { ...base, attempt };
}
