/**
 * The state of one Redis client, said once per change. ioredis emits an `error` for every failed reconnect (several a
 * second while Redis is down), and a client without an `error` listener prints `[ioredis] Unhandled error event` with
 * a stack each time: hundreds of lines in a minute that say nothing new. Every client the app and the runner hold is
 * watched here instead, which logs one JSON line when it goes down (with the cause in words), one when it starts
 * retrying, and one when it is back. /readyz names the same cause (redisUnreachable).
 */

/** What is watched: an ioredis Redis or Cluster (their `status` and their events). */
export interface WatchedClient {
  status: string;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'reconnecting' | 'ready' | 'end', listener: (...args: unknown[]) => void): unknown;
}

export interface StateLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

type State = 'connecting' | 'up' | 'down' | 'retrying';

interface Watcher {
  state: State;
  cause?: string;
}

const watchers = new WeakMap<object, Watcher>();

const CAUSES: [RegExp, string][] = [
  [/ECONNREFUSED/, 'connection refused'],
  [/ENOTFOUND|EAI_AGAIN/, 'host not found'],
  [/ETIMEDOUT|timed out/i, 'timed out'],
  [/ECONNRESET|EPIPE/, 'connection reset'],
  [/EHOSTUNREACH|ENETUNREACH/, 'host unreachable'],
  [/NOAUTH|WRONGPASS|invalid password/i, 'authentication failed'],
  [/All sentinels are unreachable/, 'every sentinel unreachable'],
  [/Failed to refresh slots cache|ClusterAllFailed/, 'no cluster node reachable'],
];

/** A connection failure in words ("connection refused"); the error's own first line when it is none of those. */
export function describeRedisError(err: unknown): string {
  const text = err instanceof Error ? `${(err as NodeJS.ErrnoException).code ?? ''} ${err.name} ${err.message}` : '';
  for (const [re, words] of CAUSES) if (re.test(text)) return words;
  const first = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  return first.slice(0, 200);
}

/**
 * Watches `client` (named `name` in every line): its `error` events are handled here (no more unhandled-error
 * stacks), and only changes of state are logged. Watching a client twice is a no-op.
 */
export function watchRedisState(client: WatchedClient, name: string, log: StateLog): void {
  if (watchers.has(client)) return;
  const w: Watcher = { state: 'connecting' };
  watchers.set(client, w);
  client.on('error', (err) => {
    w.cause = describeRedisError(err);
    if (w.state === 'down' || w.state === 'retrying') return;
    w.state = 'down';
    log.warn({ redis: name, state: 'down', cause: w.cause }, `Redis (${name}) unreachable: ${w.cause}`);
  });
  client.on('reconnecting', (delay) => {
    if (w.state !== 'down') return;
    w.state = 'retrying';
    const delayMs = typeof delay === 'number' ? delay : undefined;
    log.info({ redis: name, state: 'retrying', delayMs }, `Redis (${name}): retrying until it answers`);
  });
  client.on('ready', () => {
    const was = w.state;
    w.state = 'up';
    w.cause = undefined;
    if (was === 'down' || was === 'retrying') log.info({ redis: name, state: 'up' }, `Redis (${name}) is back`);
  });
}

/** An error that means "Redis is not reachable now" (a watcher says so once), not an answer Redis gave. */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (CAUSES.some(([re]) => re.test(`${(err as NodeJS.ErrnoException).code ?? ''} ${err.name} ${err.message}`)))
    return true;
  return /enableOfflineQueue|Connection is closed|Command timed out|MaxRetriesPerRequest|Stream isn't writeable/.test(
    `${err.name} ${err.message}`,
  );
}

/** Resolves once `client` is connected, or after `ms` (a start-up that goes on while Redis is down). */
export function untilReady(client: WatchedClient, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    client.on('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Why a watched `client` cannot serve now ("Redis unreachable: connection refused"); undefined while it is connected,
 * still making its first connection, or not watched (the caller then asks Redis itself).
 */
export function redisUnreachable(client: { status: string }): string | undefined {
  if (client.status === 'ready') return undefined;
  const cause = watchers.get(client)?.cause;
  return cause === undefined ? undefined : `Redis unreachable: ${cause}`;
}
