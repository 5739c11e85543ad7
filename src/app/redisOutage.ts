import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Probot } from 'probot';

/** What the outage check needs from an ioredis client (Redis or Cluster): its connection state. */
export interface ConnectionState {
  status: string;
}

/**
 * ioredis's errors for "Redis is not reachable now" (fail-fast connections, src/queue/connection.ts), as opposed
 * to a command Redis answered with an error. Names where ioredis has a class, messages where it has none.
 */
const OUTAGE_NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);
const OUTAGE_MESSAGES = [
  /enableOfflineQueue options? is false/,
  /^Connection is closed/,
  /^Command timed out/,
  /Failed to refresh slots cache/,
  /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE)\b/,
  /^All sentinels are unreachable/,
];

export function isRedisOutage(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (OUTAGE_NAMES.has(err.name)) return true;
  return OUTAGE_MESSAGES.some((re) => re.test(err.message));
}

const RETRY_AFTER_SECONDS = 30;

type Middleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: () => void,
) => Promise<boolean | void> | boolean | void;

function unavailable(res: ServerResponse): true {
  const error = 'Service Unavailable: the queue (Redis) is unreachable; redeliver this webhook later';
  const body = JSON.stringify({ error });
  res.writeHead(503, {
    'content-type': 'application/json',
    'retry-after': String(RETRY_AFTER_SECONDS),
    connection: 'close',
  });
  res.end(body);
  return true;
}

/** Answers a webhook 503 before any handler runs while one of `connections` is not connected. */
export function refuseWebhooksWhileDown(inner: Middleware, connections: ConnectionState[]): Middleware {
  return (req, res, next) => {
    const webhook = req.method === 'POST' && req.headers['x-github-event'] !== undefined;
    if (webhook && connections.some((c) => c.status !== 'ready')) return unavailable(res);
    return inner(req, res, next);
  };
}

/**
 * While Redis is unreachable a webhook is answered 503, never 500 or a hang: GitHub records the failed delivery and
 * a redelivery works once Redis is back. Two places catch it: before the handlers (a connection already known to be
 * down) and after them (Redis went away mid-handler: @octokit/webhooks answers with the first error's `status`).
 */
export function answerRedisOutagesWith503(probot: Probot, connections: ConnectionState[]): void {
  const original = probot.getNodeMiddleware.bind(probot);
  probot.getNodeMiddleware = async (opts) =>
    refuseWebhooksWhileDown(await original(opts), connections) as Awaited<ReturnType<typeof original>>;
  probot.onError((error) => {
    const errors: unknown[] = error instanceof AggregateError ? error.errors : [error];
    for (const e of errors) if (isRedisOutage(e)) Object.assign(e as Error, { status: 503 });
  });
}
