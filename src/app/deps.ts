import type { Probot } from 'probot';
import type { Redis } from 'ioredis';
import type { PermissionOctokit } from '../github/permissions.js';
import type { StatusOctokit } from '../github/statusComment.js';
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
}

/** What every handler is given: the app's dependencies with their defaults filled in. */
export interface HandlerDeps {
  queue: FrognanoQueue;
  redis: Redis;
  label: string;
  now: () => Date;
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
  const { queue, redis } = deps;
  return { queue, redis, label: deps.label ?? DEFAULT_LABEL, now: deps.now ?? (() => new Date()) };
}

export function labelFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.FROGNANO_LABEL?.trim() || DEFAULT_LABEL;
}
