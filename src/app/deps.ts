import type { Probot } from 'probot';
import type { Redis } from 'ioredis';
import type { PermissionOctokit } from '../github/permissions.js';
import type { StatusOctokit } from '../github/statusComment.js';
import type { FairShare } from '../queue/fairShare/dispatcher.js';
import type { FrognanoQueue } from '../queue/queue.js';

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
}

/** What every handler is given: the app's dependencies with their defaults filled in. */
export interface HandlerDeps {
  queue: FrognanoQueue;
  redis: Redis;
  label: string;
  now: () => Date;
  fairShare?: FairShare;
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
  const { queue, redis, fairShare } = deps;
  return { queue, redis, fairShare, label: deps.label ?? DEFAULT_LABEL, now: deps.now ?? (() => new Date()) };
}

export function labelFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.FROGNANO_LABEL?.trim() || DEFAULT_LABEL;
}
