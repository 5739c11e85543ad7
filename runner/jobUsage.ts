import type { JobData } from '../src/queue/schema.js';
import { tenantOf } from '../src/queue/fairShare/tenants.js';
import { recordRunnerSeconds } from '../src/queue/quotas/store.js';
import type { RunnerContext } from '../src/runner/types.js';

/**
 * What one job uses, for the quotas and the per-installation metrics: the time it holds this runner (written to
 * the runner-seconds ledger when it ends, whatever the outcome) and the tokens the model generates for it.
 */
export function startJobUsage(ctx: RunnerContext, data: JobData): { ctx: RunnerContext; end(): Promise<void> } {
  const tenant = tenantOf(data);
  const started = Date.now();
  const jobCtx = ctx.metrics ? { ...ctx, metrics: ctx.metrics.forInstallation(tenant.installation) } : ctx;
  return {
    ctx: jobCtx,
    async end() {
      const seconds = (Date.now() - started) / 1000;
      ctx.metrics?.recordInstallationRun(tenant.installation, seconds);
      await recordRunnerSeconds(ctx.redis, tenant, seconds).catch((err: unknown) =>
        ctx.logger.warn({ err, installation: tenant.installation }, 'could not write the runner-seconds ledger'),
      );
    },
  };
}
