/**
 * Operations endpoints, the same on the app and on runners:
 *   GET /healthz  - the process is alive and its event loop answers (liveness: restart me if this fails)
 *   GET /readyz   - every dependency check passes (readiness: send me work only if this passes)
 *   GET /metrics  - Prometheus text format
 * The app mounts `opsHandler` next to Probot's middleware (Probot's Server.addHandler accepts it as is);
 * a runner has no other HTTP server and calls `startOpsServer`.
 */
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { redact } from '../util/redact.js';
import { describeRedisError, redisUnreachable } from '../util/redisState.js';
import { metrics as defaultMetrics, type FrognanoMetrics } from './metrics.js';

/** One dependency /readyz waits on. `check` resolves when ready and throws (or returns false) when not. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<unknown> | unknown;
  /** Default 2,000 ms: a probe that hangs is a failed probe. */
  timeoutMs?: number;
}

export interface CheckResult {
  name: string;
  ok: boolean;
  ms: number;
  error?: string;
}

export interface OpsHandlerOptions {
  checks?: ReadinessCheck[];
  /** Shorthand for one extra check named `ready` (e.g. "the model is loaded"). */
  ready?: () => Promise<boolean> | boolean;
  metrics?: FrognanoMetrics;
}

/** Answers the ops paths and returns true; returns false for anything else. */
export interface OpsHandler {
  (req: IncomingMessage, res: ServerResponse): boolean;
  /** Adds a readiness check later (e.g. once the Redis connection exists). */
  addCheck(c: ReadinessCheck): void;
}

export const OPS_PATHS = ['/healthz', '/readyz', '/metrics'] as const;

const DEFAULT_CHECK_TIMEOUT_MS = 2000;

/** Pings Redis (ioredis or anything with `ping()`); the usual /readyz check for both app and runner. */
export function redisCheck(redis: { ping(): Promise<string>; status?: string }, name = 'redis'): ReadinessCheck {
  return {
    name,
    async check() {
      // A client known to be down answers with its cause ("Redis unreachable: connection refused"), not with the
      // error a fail-fast PING gets ("Stream isn't writeable and enableOfflineQueue options is false").
      const down = redis.status === undefined ? undefined : redisUnreachable(redis as { status: string });
      if (down) throw new Error(down);
      let pong: string;
      try {
        pong = await redis.ping();
      } catch (err) {
        throw new Error(`Redis unreachable: ${describeRedisError(err)}`);
      }
      if (pong !== 'PONG') throw new Error(`unexpected PING reply ${JSON.stringify(pong)}`);
    },
  };
}

async function runCheck(c: ReadinessCheck): Promise<CheckResult> {
  const started = Date.now();
  const timeoutMs = c.timeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      Promise.resolve().then(() => c.check()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    if (outcome === false) return { name: c.name, ok: false, ms: Date.now() - started, error: 'not ready' };
    return { name: c.name, ok: true, ms: Date.now() - started };
  } catch (err) {
    // Error text can carry a Redis URL with its password; the probe output is readable by anyone who can reach the port.
    const message = err instanceof Error ? err.message : String(err);
    return { name: c.name, ok: false, ms: Date.now() - started, error: redact(message).slice(0, 500) };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

export async function runReadinessChecks(checks: ReadinessCheck[]): Promise<{ ready: boolean; checks: CheckResult[] }> {
  const results = await Promise.all(checks.map(runCheck));
  return { ready: results.every((r) => r.ok), checks: results };
}

function sendJson(res: ServerResponse, status: number, body: unknown, head: boolean): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(head ? undefined : text);
}

/**
 * Builds a request handler for the three ops paths. It returns true when the request was one of
 * them (and it answers it, asynchronously), false otherwise so the caller's next handler runs.
 */
export function createOpsHandler(opts: OpsHandlerOptions = {}): OpsHandler {
  const reg = opts.metrics ?? defaultMetrics;
  const list: ReadinessCheck[] = [...(opts.checks ?? [])];
  if (opts.ready) list.push({ name: 'ready', check: opts.ready });

  const handler = (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = (req.url ?? '/').split('?')[0];
    if (!(OPS_PATHS as readonly string[]).includes(path)) return false;
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
      res.end('Method Not Allowed\n');
      return true;
    }
    const respond = async (): Promise<void> => {
      if (path === '/healthz') {
        sendJson(res, 200, { status: 'ok', uptimeSeconds: Math.round(process.uptime()) }, head);
      } else if (path === '/readyz') {
        const result = await runReadinessChecks(list);
        sendJson(
          res,
          result.ready ? 200 : 503,
          { status: result.ready ? 'ready' : 'not ready', checks: result.checks },
          head,
        );
      } else {
        const { contentType, body } = await reg.render();
        res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
        res.end(head ? undefined : body);
      }
    };
    respond().catch((err: unknown) => {
      const message = redact(err instanceof Error ? err.message : String(err));
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`ops endpoint failed: ${message}\n`);
    });
    return true;
  };
  return Object.assign(handler, {
    addCheck(c: ReadinessCheck) {
      list.push(c);
    },
  });
}

/**
 * The handler the app mounts next to Probot: `server.addHandler(opsHandler)` or, with a plain
 * http server, `if (!opsHandler(req, res)) probotMiddleware(req, res)`. Register its dependency
 * checks with `addReadinessCheck(redisCheck(redis))` at start-up.
 */
export const opsHandler: OpsHandler = createOpsHandler();
export function addReadinessCheck(c: ReadinessCheck): void {
  opsHandler.addCheck(c);
}

export interface OpsServer {
  server: Server;
  /** The port actually bound (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

/** A runner's ops server: only the ops paths, 404 for anything else. */
export async function startOpsServer(opts: OpsHandlerOptions & { port: number; host?: string }): Promise<OpsServer> {
  const handle = createOpsHandler(opts);
  const server = http.createServer((req, res) => {
    if (!handle(req, res)) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Not Found\n');
    }
  });
  // Probes must not keep a shutting-down runner alive.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
