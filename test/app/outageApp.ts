/**
 * The app's webhook server as src/app/server.ts wires it (frognano handlers, the 503-while-Redis-is-down guard,
 * Probot's signature-checking middleware) on a real HTTP port, over connections the test chooses: the Redis HA
 * tests point it at a Sentinel-managed master or at a server they kill. GitHub is nock'd (labeled issue flow).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { createNodeMiddleware } from 'probot';
import type { Redis } from 'ioredis';
import { createFrognanoApp } from '../../src/app/index.js';
import { answerRedisOutagesWith503 } from '../../src/app/redisOutage.js';
import type { FrognanoQueue } from '../../src/queue/queue.js';
import { API, labeledPayload, testProbot } from './helpers.js';

const SECRET = 'outage-secret';

export interface OutageApp {
  /** POSTs a signed issues.labeled delivery for `issueNumber`; resolves with the HTTP status. */
  label(issueNumber: number): Promise<number>;
  close(): Promise<void>;
}

/** GitHub as the label flow sees it: a writer labels, the bot reads and writes its status comment. */
export function nockGitHubForLabels(): void {
  nock(API)
    .persist()
    .post(/\/app\/installations\/\d+\/access_tokens/)
    .reply(201, {
      token: 'ghs_outage',
      expires_at: '2099-01-01T00:00:00Z',
      permissions: {},
      repository_selection: 'all',
    });
  nock(API)
    .persist()
    .get(/\/collaborators\/[^/]+\/permission$/)
    .reply(200, { permission: 'write', role_name: 'write' });
  nock(API)
    .persist()
    .get(/\/issues\/\d+\/comments/)
    .reply(200, []);
  nock(API)
    .persist()
    .post(/\/issues\/\d+\/comments$/)
    .reply(201, { id: 1, html_url: 'https://x' });
  nock(API)
    .persist()
    .patch(/\/issues\/comments\/\d+$/)
    .reply(200, { id: 1, html_url: 'https://x' });
  nock(API)
    .persist()
    .post(/\/reactions$/)
    .reply(201, {});
}

export async function startOutageApp(queue: FrognanoQueue, redis: Redis, connections: Redis[]): Promise<OutageApp> {
  const probot = testProbot({ secret: SECRET });
  await probot.load(createFrognanoApp({ queue, redis }));
  answerRedisOutagesWith503(probot, connections);
  const middleware = await createNodeMiddleware(() => undefined, { probot });
  const server = createServer((req, res) => void middleware(req, res, () => res.writeHead(404).end('not found')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
  return {
    async label(issueNumber) {
      const body = JSON.stringify(labeledPayload({ issueNumber }));
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
        },
        body,
        signal: AbortSignal.timeout(20_000),
      });
      await res.text();
      return res.status;
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
