import { postComment } from '../github/comments.js';
import { issueSlug, type IssueKey } from '../queue/attempts.js';
import { tenantOf } from '../queue/fairShare/tenants.js';
import { botKey } from '../queue/keys.js';
import { claimOnce } from '../queue/lock.js';
import { checkQuotas, type QuotaRefusal } from '../queue/quotas/check.js';
import type { Delivery, HandlerDeps } from './deps.js';
import * as msg from './messages.js';

/**
 * The quota check before anything is queued (docs/operating-at-scale.md, "Quotas"). Over quota, the issue or pull
 * request gets one comment per quota and reset period: the mark expires when the quota resets, so an ask after
 * that is checked (and, if still refused, answered) afresh. Returns the refusal, or null when the run may go.
 */
export async function refuseOverQuota(deps: HandlerDeps, d: Delivery, key: IssueKey): Promise<QuotaRefusal | null> {
  const cfg = deps.quotas?.();
  if (!cfg) return null;
  const tenant = tenantOf(key);
  const now = deps.now();
  const refusal = await checkQuotas(deps.redis, cfg, tenant, now);
  if (!refusal) return null;
  deps.metrics?.recordQuotaRefusal(tenant.installation, refusal.quota);
  const log = d.log.child({ quota: refusal.quota, scope: refusal.scope, used: refusal.used, limit: refusal.limit });
  const mark = botKey('quota-answered', issueSlug(key), refusal.quota);
  const ttlSeconds = Math.max(1, Math.ceil((refusal.resetAt.getTime() - now.getTime()) / 1000));
  if (!(await claimOnce(deps.redis, mark, ttlSeconds))) {
    log.info('over quota; already said so on this thread for this period');
    return refusal;
  }
  log.info('over quota: not queued');
  try {
    await postComment(d.octokit, key, msg.overQuotaText(refusal));
  } catch (err) {
    await deps.redis.del(mark);
    throw err;
  }
  return refusal;
}
