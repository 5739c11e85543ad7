import type { Redis } from 'ioredis';
import nock from 'nock';
import { createRedisConnection } from '../../src/queue/connection.js';

// Its own module, not fixtures.ts: importing nock intercepts every HTTP request of the file, dockerode's to the
// Docker socket included, so only test files that use nock may load it.
/**
 * A runner test file's real Redis and nock (GitHub's REST API only, no other network), set up before its tests and
 * taken down after them; `use` receives the connection.
 */
export function useRedisAndNock(use: (redis: Redis) => void): void {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedisConnection(process.env.REDIS_URL);
    use(redis);
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  afterAll(async () => {
    nock.enableNetConnect();
    nock.restore();
    await redis.quit();
  });
}
