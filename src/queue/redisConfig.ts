/**
 * Where Redis is, read from the environment once and validated (zod) so a wrong combination fails at start-up with
 * a message that names the variables, never later as a connection that quietly points somewhere else.
 *
 *   single   REDIS_URL=redis://[:password@]host:port[/db]   (rediss:// for TLS); the default, 127.0.0.1:6379
 *   sentinel REDIS_SENTINELS=host:port,…  REDIS_SENTINEL_NAME=<master name>
 *            [REDIS_PASSWORD] [REDIS_SENTINEL_PASSWORD]
 *   cluster  REDIS_CLUSTER_NODES=host:port,…  [REDIS_PASSWORD]
 *   REDIS_TLS=1 turns on TLS for sentinel and cluster (single takes it from the rediss:// scheme).
 *
 * In a cluster every key the bot touches must hash to one slot so BullMQ's multi-key scripts and the bot's MULTIs
 * work: the bot's own keys then start with the hash tag `{frognano}`, the queue prefix (FROGNANO_QUEUE_PREFIX)
 * defaults to it, and a queue prefix without a `{…}` tag is refused.
 */
import { z } from 'zod';
import { maskUrlPassword } from '../util/redact.js';
import { SettingError } from '../util/settings.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** The hash tag that puts every key of the bot (and of its queue) in one cluster slot. */
export const CLUSTER_KEY_TAG = '{frognano}';
/** The bot's own key prefix outside a cluster: the keys it always had (`frognano:attempt:…`). */
export const PLAIN_KEY_PREFIX = 'frognano';

export interface HostPort {
  host: string;
  port: number;
}

export type RedisTarget =
  | { mode: 'single'; url: string }
  | {
      mode: 'sentinel';
      sentinels: HostPort[];
      name: string;
      password?: string;
      sentinelPassword?: string;
      tls: boolean;
    }
  | { mode: 'cluster'; nodes: HostPort[]; password?: string; tls: boolean };

export interface RedisConfig {
  target: RedisTarget;
  /** BullMQ's key prefix; undefined means BullMQ's default `bull`. */
  queuePrefix: string | undefined;
  /** Prefix of the bot's own keys (src/queue/keys.ts). */
  keyPrefix: string;
}

const VARS = [
  'REDIS_URL',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_NAME',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_TLS',
  'REDIS_CLUSTER_NODES',
  'FROGNANO_QUEUE_PREFIX',
] as const;

const hostPort = z
  .string()
  .regex(/^\[?[A-Za-z0-9_.:-]+\]?:\d{1,5}$/, 'expected host:port')
  .transform((s): HostPort => {
    const i = s.lastIndexOf(':');
    return { host: s.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(s.slice(i + 1)) };
  });
const hostList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  )
  .pipe(z.array(hostPort).min(1, 'expected at least one host:port'));

const EnvSchema = z.object({
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
    .optional(),
  REDIS_SENTINELS: hostList.optional(),
  REDIS_SENTINEL_NAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  REDIS_TLS: z.enum(['0', '1', 'true', 'false']).optional(),
  REDIS_CLUSTER_NODES: hostList.optional(),
  FROGNANO_QUEUE_PREFIX: z.string().optional(),
});
type Env = z.infer<typeof EnvSchema>;

/** A setting to fix, like any other: entry points print it on one line and exit 2 (settings.ts). */
export class RedisConfigError extends SettingError {
  override name = 'RedisConfigError';
  constructor(problems: string[]) {
    super('REDIS', `invalid Redis settings: ${problems.join('; ')}`);
  }
}

/** Set, trimmed, non-empty values only: an empty variable in a manifest means "not set". */
function present(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of VARS) {
    const v = env[k]?.trim();
    if (v) out[k] = v;
  }
  return out;
}

/** The combinations that have no meaning, each with what to do instead. */
function conflicts(e: Env): string[] {
  const errs: string[] = [];
  const sentinel = e.REDIS_SENTINELS !== undefined;
  const cluster = e.REDIS_CLUSTER_NODES !== undefined;
  if (sentinel && cluster) {
    errs.push('REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set: choose Sentinel or Cluster');
  }
  if (e.REDIS_URL && (sentinel || cluster)) {
    const other = sentinel ? 'REDIS_SENTINELS' : 'REDIS_CLUSTER_NODES';
    errs.push(`REDIS_URL cannot be combined with ${other}: unset REDIS_URL`);
  }
  if (sentinel && !e.REDIS_SENTINEL_NAME) errs.push("REDIS_SENTINELS needs REDIS_SENTINEL_NAME (the master's name)");
  if (!sentinel && e.REDIS_SENTINEL_NAME) errs.push('REDIS_SENTINEL_NAME is set without REDIS_SENTINELS');
  if (!sentinel && e.REDIS_SENTINEL_PASSWORD) errs.push('REDIS_SENTINEL_PASSWORD is set without REDIS_SENTINELS');
  if (!sentinel && !cluster && e.REDIS_PASSWORD) {
    errs.push('REDIS_PASSWORD is for Sentinel or Cluster; with a single instance put it in REDIS_URL (redis://:pw@h)');
  }
  if (!sentinel && !cluster && e.REDIS_TLS) {
    errs.push('REDIS_TLS is for Sentinel or Cluster; with a single instance use a rediss:// REDIS_URL');
  }
  const q = e.FROGNANO_QUEUE_PREFIX;
  if (cluster && q && !/\{[^{}]+\}/.test(q)) {
    errs.push(`FROGNANO_QUEUE_PREFIX=${q} has no {hash tag}: in a cluster use e.g. {${q}}`);
  }
  return errs;
}

function targetOf(e: Env): RedisTarget {
  const tls = e.REDIS_TLS === '1' || e.REDIS_TLS === 'true';
  if (e.REDIS_SENTINELS) {
    return {
      mode: 'sentinel',
      sentinels: e.REDIS_SENTINELS,
      name: e.REDIS_SENTINEL_NAME!,
      tls,
      ...(e.REDIS_PASSWORD ? { password: e.REDIS_PASSWORD } : {}),
      ...(e.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: e.REDIS_SENTINEL_PASSWORD } : {}),
    };
  }
  if (e.REDIS_CLUSTER_NODES) {
    const password = e.REDIS_PASSWORD ? { password: e.REDIS_PASSWORD } : {};
    return { mode: 'cluster', nodes: e.REDIS_CLUSTER_NODES, tls, ...password };
  }
  return { mode: 'single', url: e.REDIS_URL ?? DEFAULT_REDIS_URL };
}

/** The one reader of the Redis settings; throws RedisConfigError listing every problem at once. */
export function redisConfigFromEnv(env: NodeJS.ProcessEnv = process.env): RedisConfig {
  const parsed = EnvSchema.safeParse(present(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new RedisConfigError(lines);
  }
  const errs = conflicts(parsed.data);
  if (errs.length) throw new RedisConfigError(errs);
  const target = targetOf(parsed.data);
  const cluster = target.mode === 'cluster';
  return {
    target,
    queuePrefix: parsed.data.FROGNANO_QUEUE_PREFIX ?? (cluster ? CLUSTER_KEY_TAG : undefined),
    keyPrefix: cluster ? CLUSTER_KEY_TAG : PLAIN_KEY_PREFIX,
  };
}

/** For logs: where Redis is, without passwords. */
export function describeRedisTarget(t: RedisTarget): string {
  const list = (hs: HostPort[]) => hs.map((h) => `${h.host}:${h.port}`).join(',');
  if (t.mode === 'sentinel') return `sentinel ${t.name} via ${list(t.sentinels)}${t.tls ? ' (TLS)' : ''}`;
  if (t.mode === 'cluster') return `cluster ${list(t.nodes)}${t.tls ? ' (TLS)' : ''}`;
  return maskUrlPassword(t.url);
}
