/**
 * Probot's own Redis client, made here. With REDIS_URL set Probot throttles its GitHub requests through Bottleneck
 * in Redis (so several app processes share GitHub's rate limit), on an ioredis client it creates itself: nobody
 * listens for that client's errors, so while Redis is down it prints `[ioredis] Unhandled error event` stacks, and
 * Probot logs each Bottleneck error again with its stack. Here the app creates the client, watches it and the
 * subscriber Bottleneck duplicates from it (src/util/redisState.ts: one line per change of state), and hands Probot
 * an Octokit class with that throttle connection; Probot itself is then given no REDIS_URL. Same behaviour as before
 * (clustered throttling when REDIS_URL is set, in-process otherwise), quieter.
 */
import Bottleneck from 'bottleneck';
import { ProbotOctokit } from 'probot';
import type { Redis } from 'ioredis';
import { createRedisConnection } from '../queue/connection.js';
import { watchRedisState, type StateLog } from '../util/redisState.js';

export interface ProbotRedis {
  /** For run()'s `Octokit` option. */
  Octokit: typeof ProbotOctokit;
  client: Redis;
  close(): Promise<void>;
}

/** Undefined without REDIS_URL: Probot then throttles in memory, as it always did without it. */
export function probotRedisFromEnv(env: NodeJS.ProcessEnv, log: StateLog): ProbotRedis | undefined {
  const url = env.REDIS_URL?.trim();
  if (!url) return undefined;
  const client = createRedisConnection(url);
  watchRedisState(client, 'probot', log);
  const connection = new Bottleneck.IORedisConnection({ client });
  // Bottleneck forwards both clients' errors here; the watchers already said what changed.
  connection.on('error', () => undefined);
  const subscriber = (connection as unknown as { subscriber?: Redis }).subscriber;
  if (subscriber) watchRedisState(subscriber, 'probot-subscriber', log);
  const Octokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
    ...options,
    throttle: { ...(options.throttle as object | undefined), Bottleneck, connection },
  })) as typeof ProbotOctokit;
  return { Octokit, client, close: () => connection.disconnect(false) };
}
