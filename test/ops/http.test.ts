import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createOpsHandler, redisCheck, startOpsServer, type OpsServer } from '../../src/ops/http.js';
import { FrognanoMetrics } from '../../src/ops/metrics.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** One request on its own connection (no keep-alive pool left open after the tests). */
function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A port nothing listens on: bind one, note it, close it. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('ops http endpoints', () => {
  const opened: OpsServer[] = [];
  const clients: Redis[] = [];
  afterAll(async () => {
    for (const s of opened) await s.close();
    for (const c of clients) c.disconnect();
  });

  async function start(opts: Parameters<typeof startOpsServer>[0]) {
    const s = await startOpsServer({ host: '127.0.0.1', ...opts });
    opened.push(s);
    return s;
  }

  it('serves /healthz, /readyz (Redis reachable, model loaded) and /metrics', async () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    clients.push(redis);
    const m = new FrognanoMetrics({ defaultMetrics: false });
    m.recordJobFinished({ status: 'completed', outcome: 'pull_request', durationSeconds: 30, turns: 5 });
    const s = await start({ port: 0, checks: [redisCheck(redis)], ready: () => true, metrics: m });

    const health = await get(s.port, '/healthz');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toMatchObject({ status: 'ok' });

    const ready = await get(s.port, '/readyz?verbose=1');
    expect(ready.status).toBe(200);
    const body = JSON.parse(ready.text);
    expect(body.status).toBe('ready');
    expect(body.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ['redis', true],
      ['ready', true],
    ]);

    const metrics = await get(s.port, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toMatch(/^text\/plain/);
    expect(metrics.text).toContain('frognano_jobs_completed_total{outcome="pull_request"} 1');

    expect((await get(s.port, '/nope')).status).toBe(404);
    expect((await get(s.port, '/healthz', 'POST')).status).toBe(405);
    const head = await get(s.port, '/healthz', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('/readyz is 503 and names the failing check when Redis is down, without leaking its password', async () => {
    const port = await closedPort();
    const redis = new Redis(`redis://:s3cretpassw0rd@127.0.0.1:${port}`, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      disconnectTimeout: 50, // ioredis otherwise holds the process 2 s after a refused connection
    });
    redis.on('error', () => undefined); // the refused connection is what this test is about
    clients.push(redis);
    const s = await start({
      port: 0,
      checks: [redisCheck(redis)],
      metrics: new FrognanoMetrics({ defaultMetrics: false }),
    });
    const ready = await get(s.port, '/readyz');
    expect(ready.status).toBe(503);
    const body = JSON.parse(ready.text);
    expect(body.status).toBe('not ready');
    expect(body.checks[0]).toMatchObject({ name: 'redis', ok: false });
    expect(body.checks[0].error).toMatch(/ECONNREFUSED|closed|Connection/i);
    expect(ready.text).not.toContain('s3cretpassw0rd');
    // Liveness does not depend on Redis: restarting the process would not bring Redis back.
    expect((await get(s.port, '/healthz')).status).toBe(200);
  });

  it('/readyz fails a check that hangs, or reports the model not loaded yet', async () => {
    let loaded = false;
    const s = await start({
      port: 0,
      checks: [{ name: 'slow', timeoutMs: 100, check: () => new Promise(() => undefined) }],
      ready: () => loaded,
      metrics: new FrognanoMetrics({ defaultMetrics: false }),
    });
    let body = JSON.parse((await get(s.port, '/readyz')).text);
    expect(body.checks).toEqual([
      expect.objectContaining({ name: 'slow', ok: false, error: 'no answer within 100 ms' }),
      expect.objectContaining({ name: 'ready', ok: false, error: 'not ready' }),
    ]);
    loaded = true;
    body = JSON.parse((await get(s.port, '/readyz')).text);
    expect(body.checks[1]).toMatchObject({ name: 'ready', ok: true });
  });

  it('opsHandler mounts next to another handler: ops paths answered, others passed on', async () => {
    const ops = createOpsHandler({ metrics: new FrognanoMetrics({ defaultMetrics: false }) });
    const server = http.createServer((req, res) => {
      if (ops(req, res)) return;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('probot');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    try {
      expect((await get(port, '/api/github/webhooks')).text).toBe('probot');
      expect((await get(port, '/healthz')).status).toBe(200);
      ops.addCheck({ name: 'late', check: () => false });
      expect((await get(port, '/readyz')).status).toBe(503);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
