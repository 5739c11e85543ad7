import { readSetting } from '../util/settings.js';
import type { Probot } from 'probot';
import type { Redis } from 'ioredis';
import type { PermissionOctokit } from '../github/permissions.js';
import type { StatusOctokit } from '../github/statusComment.js';
import type { FrognanoMetrics } from '../ops/metrics.js';
import type { FairShare } from '../queue/fairShare/dispatcher.js';
import type { QuotasConfig } from '../queue/quotas/schema.js';
import type { FrognanoQueue } from '../queue/queue.js';
import type { CiJudgeQueue } from '../queue/ciJudge.js';

export const DEFAULT_LABEL = 'frognano';

/** What createFrognanoApp is given. */
export interface AppDeps {
  queue: FrognanoQueue;
  /** Plain Redis connection for attempts, locks, status-comment cache and cancel requests. */
  redis: Redis;
  /** Trigger label (env FROGNANO_LABEL); compared case-insensitively, like GitHub does. */
  label?: string;
  /** Clock, injectable for tests. */
  now?: () => Date;
  /** Fair share between installations and repositories; without it jobs go straight into the queue (FIFO). */
  fairShare?: FairShare;
  /** The operator's quotas as last read (FROGNANO_QUOTAS_FILE); null or absent: no quotas. */
  quotas?: () => QuotasConfig | null;
  metrics?: FrognanoMetrics;
  /** Where failing CI waits out its settle window (src/queue/ciJudge.ts); absent, CI is judged on the webhook. */
  ciJudge?: CiJudgeQueue;
}

/** What every handler is given: the app's dependencies with their defaults filled in. */
export interface HandlerDeps {
  queue: FrognanoQueue;
  redis: Redis;
  label: string;
  now: () => Date;
  fairShare?: FairShare;
  quotas?: () => QuotasConfig | null;
  metrics?: FrognanoMetrics;
  ciJudge?: CiJudgeQueue;
}

export type Log = Probot['log'];
/** The slice of the installation client the handlers pass on to src/github. */
export type AppOctokit = StatusOctokit & PermissionOctokit;

/** One webhook delivery: its id, the installation's client and a log that names the issue or pull request. */
export interface Delivery {
  id: string;
  octokit: AppOctokit;
  log: Log;
}

export function handlerDeps(deps: AppDeps): HandlerDeps {
  const { queue, redis, fairShare, quotas, metrics, ciJudge } = deps;
  return {
    queue,
    redis,
    fairShare,
    quotas,
    metrics,
    ciJudge,
    label: deps.label ?? DEFAULT_LABEL,
    now: deps.now ?? (() => new Date()),
  };
}

export function labelFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return readSetting(env, 'FROGNANO_LABEL') ?? DEFAULT_LABEL;
}
