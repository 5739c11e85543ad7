import { describe, expect, test } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import { createRedisConnection } from '../../src/queue/connection.js';
import { describeRedisTarget, redisConfigFromEnv } from '../../src/queue/redisConfig.js';

describe('redisConfigFromEnv', () => {
  test("nothing set: the local single instance, BullMQ's default prefix, the bot's usual key prefix", () => {
    expect(redisConfigFromEnv({})).toEqual({
      target: { mode: 'single', url: 'redis://127.0.0.1:6379' },
      queuePrefix: undefined,
      keyPrefix: 'frognano',
    });
    expect(redisConfigFromEnv({ REDIS_URL: ' rediss://:pw@r:6380/1 ', FROGNANO_QUEUE_PREFIX: 'q' })).toMatchObject({
      target: { mode: 'single', url: 'rediss://:pw@r:6380/1' },
      queuePrefix: 'q',
    });
  });

  test("Sentinel: the sentinels, the master's name, both passwords and TLS", () => {
    const cfg = redisConfigFromEnv({
      REDIS_SENTINELS: 's1:26379, s2:26379,[::1]:26380',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_PASSWORD: 'pw',
      REDIS_SENTINEL_PASSWORD: 'spw',
      REDIS_TLS: '1',
    });
    expect(cfg.target).toEqual({
      mode: 'sentinel',
      name: 'mymaster',
      password: 'pw',
      sentinelPassword: 'spw',
      tls: true,
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
    });
    expect(cfg.keyPrefix).toBe('frognano');
    expect(describeRedisTarget(cfg.target)).toBe('sentinel mymaster via s1:26379,s2:26379,::1:26380 (TLS)');
  });

  test("Cluster: the nodes, and the {frognano} hash tag for the queue and the bot's keys", () => {
    const cfg = redisConfigFromEnv({ REDIS_CLUSTER_NODES: 'a:7000,b:7001', REDIS_PASSWORD: 'pw' });
    expect(cfg).toEqual({
      target: {
        mode: 'cluster',
        nodes: [
          { host: 'a', port: 7000 },
          { host: 'b', port: 7001 },
        ],
        password: 'pw',
        tls: false,
      },
      queuePrefix: '{frognano}',
      keyPrefix: '{frognano}',
    });
    expect(redisConfigFromEnv({ REDIS_CLUSTER_NODES: 'a:7000', FROGNANO_QUEUE_PREFIX: '{bot}' }).queuePrefix).toBe(
      '{bot}',
    );
  });

  test.each([
    [{ REDIS_SENTINELS: 'a:1', REDIS_CLUSTER_NODES: 'b:2', REDIS_SENTINEL_NAME: 'm' }, /choose Sentinel or Cluster/],
    [
      { REDIS_URL: 'redis://x', REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm' },
      /REDIS_URL cannot be combined with REDIS_SENTINELS/,
    ],
    [{ REDIS_URL: 'redis://x', REDIS_CLUSTER_NODES: 'a:1' }, /REDIS_URL cannot be combined with REDIS_CLUSTER_NODES/],
    [{ REDIS_SENTINELS: 'a:1' }, /needs REDIS_SENTINEL_NAME/],
    [{ REDIS_SENTINEL_NAME: 'm' }, /REDIS_SENTINEL_NAME is set without REDIS_SENTINELS/],
    [{ REDIS_SENTINEL_PASSWORD: 'x' }, /REDIS_SENTINEL_PASSWORD is set without REDIS_SENTINELS/],
    [{ REDIS_PASSWORD: 'x' }, /put it in REDIS_URL/],
    [{ REDIS_TLS: '1' }, /use a rediss:\/\/ REDIS_URL/],
    [{ REDIS_CLUSTER_NODES: 'a:1', FROGNANO_QUEUE_PREFIX: 'bull' }, /FROGNANO_QUEUE_PREFIX=bull has no \{hash tag\}/],
    [{ REDIS_CLUSTER_NODES: 'a' }, /REDIS_CLUSTER_NODES: expected host:port/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL: expected a redis:\/\/ or rediss:\/\/ URL/],
    [{ REDIS_TLS: 'yes', REDIS_CLUSTER_NODES: 'a:1' }, /REDIS_TLS/],
  ])('refuses %j with a message that says what to do', (env, message) => {
    expect(() => redisConfigFromEnv(env)).toThrow(message);
  });

  test('blank variables count as unset', () => {
    expect(redisConfigFromEnv({ REDIS_URL: '', REDIS_SENTINELS: ' ', REDIS_PASSWORD: '' }).target.mode).toBe('single');
  });
});

describe('createRedisConnection', () => {
  const opts = (c: Redis) => c.options;
  test('worker connections wait through outages; enqueue connections fail fast', () => {
    const worker = createRedisConnection('redis://127.0.0.1:1', { lazyConnect: true });
    const enqueue = createRedisConnection('redis://127.0.0.1:1', { lazyConnect: true, purpose: 'enqueue' });
    expect(opts(worker)).toMatchObject({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    expect(opts(enqueue)).toMatchObject({ maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 5000 });
    worker.disconnect();
    enqueue.disconnect();
  });

  test('a Sentinel target asks the sentinels for the named master; a Cluster target makes a Cluster client', () => {
    const s = createRedisConnection(
      { mode: 'sentinel', sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'm', password: 'pw', tls: false },
      { lazyConnect: true },
    );
    expect(opts(s)).toMatchObject({ name: 'm', sentinels: [{ host: '127.0.0.1', port: 1 }], password: 'pw' });
    s.disconnect();
    const c = createRedisConnection(
      { mode: 'cluster', nodes: [{ host: '127.0.0.1', port: 1 }], tls: true },
      { lazyConnect: true, purpose: 'enqueue' },
    );
    expect(c).toBeInstanceOf(Cluster);
    const cluster = c as unknown as Cluster;
    expect(cluster.options).toMatchObject({
      enableOfflineQueue: false,
      redisOptions: { maxRetriesPerRequest: 1, tls: {} },
    });
    cluster.disconnect();
  });
});
