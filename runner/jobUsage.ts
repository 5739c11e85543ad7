import { JobDataSchema, type JobData } from '../src/queue/schema.js';
import { tenantOf } from '../src/queue/fairShare/tenants.js';
import { releaseHold, settleHold } from '../src/queue/quotas/holds.js';
import { recordRunnerSeconds } from '../src/queue/quotas/store.js';
import type { RunnerContext } from '../src/runner/types.js';

/**
 * What one job uses, for the quotas and the per-installation metrics: the time it holds this runner (written to
 * the runner-seconds ledger when it ends, whatever the outcome, in the same transaction that drops the hold the job
 * took when it was admitted) and the tokens the model generates for it.
 */
export function startJobUsage(
  ctx: RunnerContext,
  data: JobData,
  jobId: string,
): { ctx: RunnerContext; end(o?: { handedBack: boolean }): Promise<void> } {
  const tenant = tenantOf(data);
  const started = Date.now();
  const jobCtx = ctx.metrics ? { ...ctx, metrics: ctx.metrics.forInstallation(tenant.installation) } : ctx;
  return {
    ctx: jobCtx,
    async end(o) {
      const seconds = (Date.now() - started) / 1000;
      ctx.metrics?.recordInstallationRun(tenant.installation, seconds);
      // A job handed back runs again: its time so far counts, its hold stays for the run that finishes it.
      const write = o?.handedBack
        ? recordRunnerSeconds(ctx.redis, tenant, seconds)
        : settleHold(ctx.redis, tenant, jobId, seconds);
      await write.catch((err: unknown) =>
        ctx.logger.warn({ err, installation: tenant.installation }, 'could not write the runner-seconds ledger'),
      );
    },
  };
}

/** A job BullMQ gave up on (it stalled too often): its hold goes; no time is recorded (its runner is gone). */
export async function releaseJobHold(ctx: RunnerContext, job: { id?: string; data: unknown }): Promise<void> {
  const data = JobDataSchema.safeParse(job.data);
  if (!data.success || !job.id) return;
  await releaseHold(ctx.redis, tenantOf(data.data), job.id);
}
