import type { Redis } from 'ioredis';
import { issueSlug, type IssueKey } from '../queue/attempts.js';
import { botKey } from '../queue/keys.js';
import { claimOnce } from '../queue/lock.js';
import type { QuotaRefusal } from '../queue/quotas/check.js';
import { postComment } from './comments.js';
import type { StatusOctokit } from './statusComment.js';

/**
 * The comment that answers a run the quotas refused (docs/operating-at-scale.md, "Quotas"), written by the app
 * (an ask) and by the runner (a round it would queue itself): one per thread, quota and reset period.
 */

const QUOTA_WORDS: Record<string, string> = {
  runsPerHour: 'runs per hour',
  runnerSecondsPerDay: 'runner time per day',
  runnerSecondsPerMonth: 'runner time per month',
};

/** Runner-seconds as people read them. */
function runnerTime(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/**
 * A run refused by a quota: which one, whose, what was used (and held by runs in progress), the limit and when it
 * frees. `what` names the run when it is not the asker's own (a repair round the bot would have started).
 */
export function overQuotaText(
  r: Pick<QuotaRefusal, 'quota' | 'scope' | 'tenant' | 'used' | 'limit' | 'resetAt' | 'inFlight'>,
  what = 'Not queued',
): string {
  const amount = (n: number) => (r.quota === 'runsPerHour' ? String(n) : runnerTime(n));
  const reset = `${r.resetAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const words = QUOTA_WORDS[r.quota] ?? r.quota;
  if (r.inFlight) {
    return (
      `${what}: the ${r.scope} \`${r.tenant}\` has no room left in its quota of ${words} ` +
      `(\`${r.quota}\`: ${amount(r.used)} used and ${amount(r.inFlight)} held by runs in progress, of ` +
      `${amount(r.limit)}). Each run holds its expected time until it ends; what it does not use frees then, and ` +
      `the quota resets at ${reset}. Ask again when a run has ended or after the reset. ` +
      'Until the reset I answer further refused asks on this thread only with this comment.'
    );
  }
  return (
    `${what}: the ${r.scope} \`${r.tenant}\` has used its quota of ${words} ` +
    `(\`${r.quota}\`: ${amount(r.used)} used of ${amount(r.limit)}). It resets at ${reset}; ask again after that. ` +
    'Until then I answer further asks on this thread only with this comment.'
  );
}

/**
 * Posts the refusal on the issue or pull request unless this thread was told about this quota in this reset
 * period already (the mark expires at the reset; `mark` keeps a kind of run apart, e.g. repair rounds). Returns
 * whether it posted.
 */
export async function postQuotaRefusal(
  octokit: StatusOctokit,
  redis: Redis,
  key: IssueKey,
  refusal: QuotaRefusal,
  o: { now: Date; what?: string; mark?: string },
): Promise<boolean> {
  const mark = botKey('quota-answered', issueSlug(key), refusal.quota, ...(o.mark ? [o.mark] : []));
  const ttlSeconds = Math.max(1, Math.ceil((refusal.resetAt.getTime() - o.now.getTime()) / 1000));
  if (!(await claimOnce(redis, mark, ttlSeconds))) return false;
  try {
    await postComment(octokit, key, overQuotaText(refusal, o.what));
  } catch (err) {
    await redis.del(mark);
    throw err;
  }
  return true;
}
