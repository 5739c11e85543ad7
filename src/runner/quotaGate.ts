import type { Logger } from 'pino';
import type { InstallationAccess } from '../github/client.js';
import { postQuotaRefusal } from '../github/quotaComment.js';
import type { IssueKey } from '../queue/attempts.js';
import { tenantOf } from '../queue/fairShare/tenants.js';
import type { AdmitRound } from '../queue/followUps.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { admitRun } from '../queue/quotas/check.js';
import { readPublishedQuotas } from '../queue/quotas/published.js';
import { jobIdFor } from '../queue/schema.js';
import type { RunnerContext } from './types.js';

/**
 * The quotas for rounds the runner queues itself (the next round from waiting asks, a verification repair): the
 * same admission as the app's (src/app/quotaGate.ts), with the limits the app stored in Redis. A refused round is
 * not queued and the pull request is told once per quota, reset period and kind (`what`, `mark`).
 */
export function runnerAdmit(
  queue: FrognanoQueue,
  ctx: RunnerContext,
  key: IssueKey,
  o: { access: () => Promise<InstallationAccess | null>; what: string; mark: string; log: Logger },
): AdmitRound {
  return async (round) => {
    const cfg = await readPublishedQuotas(ctx.redis);
    if (!cfg) return null;
    const now = new Date();
    const tenant = tenantOf(key);
    const start = { jobId: jobIdFor({ ...key, attempt: round }), jobKeyPrefix: queue.toKey('') };
    const refusal = await admitRun(ctx.redis, cfg, tenant, start, now);
    if (!refusal) return null;
    ctx.metrics?.recordQuotaRefusal(tenant.installation, refusal.quota);
    o.log.info({ quota: refusal.quota, scope: refusal.scope, round }, `over quota: ${o.mark} round not queued`);
    const access = await o.access();
    if (access)
      await postQuotaRefusal(access.octokit, ctx.redis, key, refusal, { now, what: o.what, mark: o.mark }).catch(
        (err: unknown) => o.log.warn({ err }, 'could not say on the pull request that the quota refused a round'),
      );
    return refusal;
  };
}
