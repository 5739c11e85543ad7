import { getUserPermission } from '../github/permissions.js';
import { forgetFreshAttempt, issueSlug, labelAttempt, type IssueKey } from '../queue/attempts.js';
import { withRedisLock } from '../queue/lock.js';
import { jobIdFor } from '../queue/schema.js';
import type { Delivery, HandlerDeps } from './deps.js';
import { enqueue } from './enqueue.js';
import { issueKey, jobData } from './jobData.js';
import * as msg from './messages.js';
import { refuseOutsider } from './outsiders.js';
import { isBot, isPullRequest, type IssueLabeledPayload } from './payloads.js';
import { refuseOverQuota } from './quotaGate.js';
import { announceQueued } from './statusUpdates.js';
import { botKey } from '../queue/keys.js';

export type LabelDecision =
  | { action: 'ignored'; why: string }
  | { action: 'refused'; role: string }
  | { action: 'existing'; jobId: string; state: string }
  | { action: 'over_quota'; quota: string }
  | { action: 'queued'; jobId: string; created: boolean };

/** True when the label added is the trigger label (compared case-insensitively, like GitHub does). */
export function isTriggerLabel(p: IssueLabeledPayload, label: string): boolean {
  return p.label.name.toLowerCase() === label.toLowerCase();
}

/** Why a trigger label on this issue starts nothing, or null. */
function whyIgnored(p: IssueLabeledPayload): string | null {
  if (isBot(p.sender)) return `label added by bot ${p.sender.login}`;
  if (isPullRequest(p.issue)) return 'label on a pull request';
  if (p.issue.state !== 'open') return 'label on a closed issue';
  return null;
}

/** `issues.labeled` with the trigger label: a writer's label queues the issue's first attempt. */
export async function onLabeled(deps: HandlerDeps, d: Delivery, p: IssueLabeledPayload): Promise<LabelDecision> {
  const why = whyIgnored(p);
  if (why) return { action: 'ignored', why };
  const key = issueKey(p);
  const perm = await getUserPermission(d.octokit, key.owner, key.repo, p.sender.login);
  if (!perm.allowed) {
    const text = msg.refusalText(p.sender.login, perm.role, 'label', deps.label);
    await refuseOutsider(deps.redis, d.octokit, key, text, d.log.child({ user: p.sender.login, role: perm.role }));
    return { action: 'refused', role: perm.role };
  }
  return withRedisLock(deps.redis, botKey('issue-lock', issueSlug(key)), () => queueFirstAttempt(deps, d, p, key));
}

async function queueFirstAttempt(
  deps: HandlerDeps,
  d: Delivery,
  p: IssueLabeledPayload,
  key: IssueKey,
): Promise<LabelDecision> {
  const { queue, redis } = deps;
  const { attempt, fresh } = await labelAttempt(redis, key);
  const jobId = jobIdFor({ ...key, attempt });
  const existing = await queue.getJob(jobId);
  if (existing || !fresh) {
    // Redelivery or a second label while it runs: nothing to do. After an attempt ended (finished,
    // cancelled or expired), re-running takes an explicit `/frognano retry`; the status comment says so.
    const state = existing ? await existing.getState() : 'gone';
    d.log.info({ jobId, state }, 'label: this issue already has an attempt; not enqueuing again');
    return { action: 'existing', jobId, state };
  }
  const refusal = await refuseOverQuota(deps, d, key, attempt);
  if (refusal) {
    await forgetFreshAttempt(redis, key); // a label after the reset starts it
    return { action: 'over_quota', quota: refusal.quota };
  }
  const data = jobData(p, key, attempt, 'label', d.id, deps.now());
  await announceQueued(deps, d.octokit, key, p.issue.html_url, data, d.log);
  let enqueued;
  try {
    enqueued = await enqueue(deps, data);
  } catch (err) {
    await forgetFreshAttempt(redis, key); // let GitHub's redelivery start it
    throw err;
  }
  const { created, job } = enqueued;
  d.log.info({ jobId: job.id, created }, 'label: enqueued');
  return { action: 'queued', jobId: job.id!, created };
}
