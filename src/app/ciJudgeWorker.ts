import { Worker, type ConnectionOptions } from 'bullmq';
import type { Probot } from 'probot';
import { CI_JUDGE_QUEUE, CiJudgmentSchema, type CiJudgment } from '../queue/ciJudge.js';
import { onCiCompleted } from './ciFix.js';
import { handlerDeps, type AppDeps, type AppOctokit } from './deps.js';
import { isRedisConnectionError } from '../util/redisState.js';

/**
 * The app's worker for delayed CI judgments (src/queue/ciJudge.ts): a head whose settle window passed, or a failure
 * that waited for a round to end. It judges as the webhook handler does, with the installation's own client.
 * `connection` is a dedicated one (a BullMQ worker blocks on it).
 */
export function startCiJudgeWorker(app: Probot, appDeps: AppDeps, connection: ConnectionOptions, prefix?: string) {
  const deps = handlerDeps(appDeps);
  const worker = new Worker<CiJudgment>(
    CI_JUDGE_QUEUE,
    async (job) => {
      const { ev, after } = CiJudgmentSchema.parse(job.data);
      const log = app.log.child({ ciJudgment: job.id, after, sha: ev.headSha.slice(0, 12) });
      const octokit = (await app.auth(ev.installationId)) as unknown as AppOctokit;
      const decision = await onCiCompleted(deps, { id: `ci-judge-${job.id ?? 'x'}`, octokit, log }, ev, after);
      if (decision.action === 'ignored') log.debug({ why: decision.why }, 'ci: no round');
      else log.info({ decision }, 'ci: round');
    },
    { connection, ...(prefix ? { prefix } : {}), concurrency: 4 },
  );
  // Redis down: its connection's watcher says so once (src/util/redisState.ts); BullMQ would repeat it every retry.
  worker.on('error', (err) => {
    if (!isRedisConnectionError(err)) app.log.warn({ err }, 'ci judgment worker error');
  });
  worker.on('failed', (job, err) => app.log.warn({ jobId: job?.id, err: err.message }, 'ci judgment failed'));
  return worker;
}
