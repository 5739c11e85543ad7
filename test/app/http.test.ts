import { describe, expect, test } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { createNodeMiddleware } from 'probot';
import { capProbotWebhookBodies } from '../../src/app/webhookBody.js';
import { API, useAppHarness, labeledPayload, nockInstallationToken, nockPermission } from './helpers.js';

const SECRET = 'test-secret'; // the harness's Probot secret
const CAP = 64 * 1024;
let server: Server;
let url: string;
const h = useAppHarness('http', {
  setUp: async (harness) => {
    // The same wiring main.ts gets from Probot's Server: the webhook middleware with signature checks.
    // A small cap here (main.ts uses GitHub's 25 MB; test/app/main.test.ts streams past that to the real server).
    capProbotWebhookBodies(harness.probot, CAP);
    const middleware = await createNodeMiddleware(() => undefined, { probot: harness.probot });
    server = createServer((req, res) => {
      void middleware(req, res, () => res.writeHead(404).end('not found'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
  },
  tearDown: () => new Promise<void>((r) => server.close(() => r())),
});

function post(body: string, signature: string, event = 'issues') {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signature,
    },
    body,
  });
}

const sign = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('webhook endpoint', () => {
  test('a correctly signed issues.labeled delivery is accepted and enqueues the job', async () => {
    nockInstallationToken();
    nockPermission('Codertocat', 'write');
    nock(API).get('/repos/Codertocat/Hello-World/issues/1/comments').query(true).reply(200, []);
    nock(API).post('/repos/Codertocat/Hello-World/issues/1/comments').reply(201, { id: 1, html_url: 'https://x' });
    const body = JSON.stringify(labeledPayload());
    const res = await post(body, sign(body));
    expect(res.status).toBe(200);
    expect((await h.queue.getJob('codertocat/hello-world#1@1'))?.data.trigger).toBe('label');
  });

  test('a delivery signed with another secret is rejected with 400 and does nothing', async () => {
    const body = JSON.stringify(labeledPayload());
    const res = await post(body, sign(body, 'not-the-secret'));
    expect(res.status).toBe(400);
    expect(await h.queue.count()).toBe(0);
  });

  test('a body changed after signing is rejected', async () => {
    const body = JSON.stringify(labeledPayload());
    const tampered = body.replace('"number":1,', '"number":2,');
    expect(tampered).not.toBe(body);
    const res = await post(tampered, sign(body));
    expect(res.status).toBe(400);
    expect(await h.queue.count()).toBe(0);
  });

  test('a signed but malformed payload is answered without crashing and enqueues nothing', async () => {
    const body = JSON.stringify({ action: 'labeled', label: { name: 'frognano' } });
    const res = await post(body, sign(body));
    expect(res.status).toBeLessThan(500);
    expect(await h.queue.count()).toBe(0);
    // The server still answers afterwards.
    const again = JSON.stringify(labeledPayload({ label: 'bug' }));
    expect((await post(again, sign(again))).status).toBe(200);
  });

  test('a body read through the cap keeps every byte: a signed non-ASCII payload is accepted', async () => {
    nockInstallationToken();
    nockPermission('Codertocat', 'write');
    nock(API).get('/repos/Codertocat/Hello-World/issues/1/comments').query(true).reply(200, []);
    nock(API).post('/repos/Codertocat/Hello-World/issues/1/comments').reply(201, { id: 1, html_url: 'https://x' });
    const p = labeledPayload();
    p.issue.title = 'Naïve 日本語 🐸 title';
    p.issue.body = '🐸'.repeat(5000); // 20 KB of 4-byte characters, split across chunks
    const body = JSON.stringify(p);
    const res = await post(body, sign(body));
    expect(res.status).toBe(200);
    expect((await h.queue.getJob('codertocat/hello-world#1@1'))?.data.title).toBe('Naïve 日本語 🐸 title');
  });

  test('a body over the cap is answered 413 and never reaches the handlers, with or without Content-Length', async () => {
    const body = JSON.stringify({ ...labeledPayload(), padding: 'x'.repeat(CAP) });
    const declared = await post(body, sign(body));
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: `Payload too large: webhook bodies are limited to ${CAP} bytes` });
    // Streamed without a length: counted while read.
    const chunked = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': sign(body),
      },
      body: new Blob([body]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await h.queue.count()).toBe(0);
  });
});
