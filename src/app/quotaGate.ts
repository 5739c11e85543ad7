import { postQuotaRefusal } from '../github/quotaComment.js';
import type { IssueKey } from '../queue/attempts.js';
import { tenantOf } from '../queue/fairShare/tenants.js';
import { admitRun, checkQuotas, type QuotaRefusal } from '../queue/quotas/check.js';
import { jobIdFor } from '../queue/schema.js';
import type { Delivery, HandlerDeps } from './deps.js';

/**
 * The quota check before anything is queued (docs/operating-at-scale.md, "Quotas"). With `attempt`, the run about
 * to be queued as that attempt (or round) of `key` is admitted: it holds its runner-seconds and takes its run from
 * the hourly buckets. Without it, the quotas are only looked at (an ask that waits is charged when its round
 * starts). Over quota, the issue or pull request gets one comment per quota and reset period: the mark expires when
 * the quota resets, so an ask after that is checked (and, if still refused, answered) afresh. Returns the refusal,
 * or null when the run may go.
 */
export async function refuseOverQuota(
  deps: HandlerDeps,
  d: Delivery,
  key: IssueKey,
  attempt?: number,
): Promise<QuotaRefusal | null> {
  const cfg = deps.quotas?.();
  if (!cfg) return null;
  const tenant = tenantOf(key);
  const now = deps.now();
  const jobKeyPrefix = deps.queue.toKey('');
  const refusal =
    attempt === undefined
      ? await checkQuotas(deps.redis, cfg, tenant, jobKeyPrefix, now)
      : await admitRun(deps.redis, cfg, tenant, { jobId: jobIdFor({ ...key, attempt }), jobKeyPrefix }, now);
  if (!refusal) return null;
  deps.metrics?.recordQuotaRefusal(tenant.installation, refusal.quota);
  const log = d.log.child({ quota: refusal.quota, scope: refusal.scope, used: refusal.used, limit: refusal.limit });
  if (await postQuotaRefusal(d.octokit, deps.redis, key, refusal, { now })) log.info('over quota: not queued');
  else log.info('over quota; already said so on this thread for this period');
  return refusal;
}
