/**
 * Real Redis servers for the HA tests, started on free loopback ports in temp dirs and stopped by `stopAll()`:
 * a plain server (master or replica), Sentinels (`redis-server --sentinel`, which is what Debian's redis-sentinel
 * runs) and a Cluster of masters made with `redis-cli --cluster create`. Every wait is bounded.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from './waitFor.js';

// The shared wait, for the files that take it from here.
export { waitFor };

export interface RedisProcess {
  port: number;
  proc: ChildProcess;
  dir: string;
}

const started: RedisProcess[] = [];

export function haveRedisTools(): boolean {
  return ['redis-server', 'redis-cli'].every((c) => spawnSync('sh', ['-c', `command -v ${c}`]).status === 0);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });
}

async function ping(port: number): Promise<boolean> {
  const r = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } finally {
    r.disconnect();
  }
}

/** Starts `redis-server <conf>` (extra `args` after it) with the config text written into a fresh temp dir. */
async function spawnRedis(conf: string, args: string[] = [], fixedPort?: number): Promise<RedisProcess> {
  const port = fixedPort ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'fn-redis-'));
  const file = join(dir, 'redis.conf');
  writeFileSync(file, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsave ""\nappendonly no\n${conf}\n`);
  const proc = spawn('redis-server', [file, ...args], { stdio: 'ignore' });
  const p = { port, proc, dir };
  started.push(p);
  await waitFor(`redis on port ${port}`, () => ping(port));
  return p;
}

/** A plain server; `port` to start one again where a killed one was. */
export function startRedis(conf = '', port?: number): Promise<RedisProcess> {
  return spawnRedis(conf, [], port);
}

export function startReplica(masterPort: number): Promise<RedisProcess> {
  return spawnRedis(`replicaof 127.0.0.1 ${masterPort}`);
}

/** A Sentinel watching `name` at masterPort; short timeouts so a test sees a failover within seconds. */
export function startSentinel(name: string, masterPort: number, quorum = 2): Promise<RedisProcess> {
  return spawnRedis(
    [
      `sentinel monitor ${name} 127.0.0.1 ${masterPort} ${quorum}`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 3000`,
      `sentinel parallel-syncs ${name} 1`,
    ].join('\n'),
    ['--sentinel'],
  );
}

/** `count` cluster-enabled masters joined into one cluster (no replicas), ready when every slot is served. */
export async function startCluster(count = 3): Promise<RedisProcess[]> {
  const nodes: RedisProcess[] = [];
  for (let i = 0; i < count; i++) {
    nodes.push(await spawnRedis('cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 2000'));
  }
  const create = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (create.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.stdout}\n${create.stderr}`);
  await waitFor('cluster state ok', async () => {
    const infos = nodes.map(
      (n) => spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout,
    );
    return infos.every((t) => t.includes('cluster_state:ok'));
  });
  return nodes;
}

/** SIGKILL: the process gets no chance to close its connections or hand anything over. */
export async function kill9(p: RedisProcess): Promise<void> {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null) return;
  const exited = new Promise((r) => p.proc.once('exit', r));
  p.proc.kill('SIGKILL');
  await exited;
}

export async function stopAll(): Promise<void> {
  for (const p of started.splice(0)) {
    await kill9(p);
    rmSync(p.dir, { recursive: true, force: true });
  }
}

export interface SentinelGroup {
  master: RedisProcess;
  replica: RedisProcess;
  sentinels: RedisProcess[];
  /** The Sentinels as REDIS_SENTINELS would name them. */
  sentinelAddresses: { host: string; port: number }[];
  /** The port the Sentinels now report for the master. */
  masterPort(): Promise<number>;
}

/** One master, one synced replica and three Sentinels that know both and each other. */
export async function startSentinelGroup(name: string): Promise<SentinelGroup> {
  const master = await startRedis();
  const replica = await startReplica(master.port);
  const r = new Redis({ port: replica.port, host: '127.0.0.1' });
  await waitFor('the replica to sync', async () => (await r.info('replication')).includes('master_link_status:up'));
  r.disconnect();
  const sentinels: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) sentinels.push(await startSentinel(name, master.port));
  const ask = async <T>(fn: (s: Redis) => Promise<T>): Promise<T> => {
    const s = new Redis({ port: sentinels[0]!.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    try {
      return await fn(s);
    } finally {
      s.disconnect();
    }
  };
  // Ready when the sentinels know the replica and each other: a failover needs both.
  await waitFor(
    'the sentinels to see the replica and each other',
    () =>
      ask(async (s) => {
        const replicas = (await s.call('SENTINEL', 'replicas', name)) as unknown[];
        const peers = (await s.call('SENTINEL', 'sentinels', name)) as unknown[];
        return replicas.length === 1 && peers.length === 2;
      }),
    20_000,
  );
  return {
    master,
    replica,
    sentinels,
    sentinelAddresses: sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
    masterPort: () =>
      ask(async (s) => Number(((await s.call('SENTINEL', 'get-master-addr-by-name', name)) as string[])[1])),
  };
}
