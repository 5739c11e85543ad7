import type { Redis } from 'ioredis';
import { describeRunner, listRunners } from '../../ops/runnerRegistry.js';
import { createRedisConnection } from '../../queue/connection.js';
import { describeRedisTarget, redisConfigFromEnv, type RedisConfig } from '../../queue/redisConfig.js';
import { maskUrlPassword } from '../../util/redact.js';
import { packageInfo } from '../../util/packageInfo.js';
import { check, type CheckResult } from './check.js';

/** Node version against package.json's engines.node (">=X.Y"). */
export async function checkNode(version = process.versions.node): Promise<CheckResult> {
  const wanted = packageInfo().engines?.node ?? '>=20';
  const min = /(\d+)(?:\.(\d+))?/.exec(wanted);
  const [major, minor] = version.split('.').map(Number);
  const needMajor = Number(min?.[1] ?? 20);
  const needMinor = Number(min?.[2] ?? 0);
  const good = major > needMajor || (major === needMajor && minor >= needMinor);
  return good
    ? check.ok('Node.js', `v${version} (needs ${wanted})`)
    : check.fail(
        'Node.js',
        `v${version}, needs ${wanted}`,
        `install Node ${needMajor}.${needMinor} or newer (e.g. nvm install ${needMajor})`,
      );
}

/**
 * PING the Redis the queue uses. Redis is what the GitHub App and the runners share; the `solve` command
 * does not need it, so an unset REDIS_URL with nothing on the default port is only a warning.
 */
export async function checkRedis(env: NodeJS.ProcessEnv, timeoutMs = 3000): Promise<CheckResult> {
  return (await checkRedisAndRunners(env, timeoutMs))[0];
}

/**
 * The Redis line and, when Redis answers, a line for the runners registered in it (F's runner registry):
 * with none, issues are queued but nobody works on them.
 */
export async function checkRedisAndRunners(env: NodeJS.ProcessEnv, timeoutMs = 3000): Promise<CheckResult[]> {
  const configured = Boolean(env.REDIS_URL || env.REDIS_SENTINELS || env.REDIS_CLUSTER_NODES);
  let config: RedisConfig;
  try {
    config = redisConfigFromEnv(env);
  } catch (err) {
    return [check.fail('Redis', (err as Error).message, 'fix the REDIS_* settings (docs/configuration.md, Queue)')];
  }
  const shown = describeRedisTarget(config.target);
  let client: Redis;
  try {
    client = createRedisConnection(config.target, {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
  } catch (err) {
    return [
      check.fail(
        'Redis',
        `REDIS_URL is not a usable URL: ${(err as Error).message}`,
        'set REDIS_URL=redis://HOST:6379',
      ),
    ];
  }
  // ioredis reports the cause (ECONNREFUSED, ENOTFOUND, WRONGPASS) here and only "Connection is closed" from connect().
  let cause: Error | undefined;
  client.on('error', (err: Error) => {
    cause ??= err;
  });
  try {
    await withTimeout(client.connect(), timeoutMs);
    const pong = await withTimeout(client.ping(), timeoutMs);
    const info = await withTimeout(client.info('server'), timeoutMs);
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown version';
    const redisLine = check.ok('Redis', `${pong} from Redis ${version} at ${shown}`);
    const runners = await withTimeout(listRunners(client, { prefix: config.keyPrefix }), timeoutMs);
    const runnersLine = runners.length
      ? check.ok(
          'Runners',
          `${runners.length} registered: ${runners.map((r) => `${describeRunner(r)} on ${r.hostname}${r.currentJob ? ` working on ${r.currentJob}` : ''}`).join('; ')}`,
          false,
        )
      : check.warn(
          'Runners',
          'none registered in this Redis',
          'jobs wait in the queue until a runner starts: `npm run runner` on the GPU machine, with the same REDIS_URL',
        );
    return [redisLine, runnersLine];
  } catch (err) {
    const why = cause?.message || (err as Error).message || String(err);
    if (!configured) {
      return [
        check.warn(
          'Redis',
          `REDIS_URL not set and nothing answers at ${shown} (${why})`,
          'the GitHub App and runners need Redis: start one (docker run -p 6379:6379 redis:7) and set REDIS_URL; `frognano solve` does not',
        ),
      ];
    }
    return [
      check.fail(
        'Redis',
        `cannot reach ${shown}: ${why}`,
        'check REDIS_URL (redis://[:password@]HOST:PORT[/db]) and that Redis is running and reachable',
      ),
    ];
  } finally {
    client.disconnect();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
