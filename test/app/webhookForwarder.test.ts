/**
 * src/app/webhookProxy.ts in-process, against the local smee stand-in: what reaches the webhook path is what GitHub
 * sent (body bytes and signature), a channel that does not answer at start neither throws nor floods the log, and the
 * setup page's channel comes from FROGNANO_SMEE_URL's server.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { channelMaker, forwardTarget, forwardWebhooks, type ProxyLog } from '../../src/app/webhookProxy.js';
import { startSmeeStandIn, type SmeeStandIn } from '../support/smeeStandIn.js';
import { freePort } from '../support/appProcess.js';
import { waitFor } from '../support/waitFor.js';

let smee: SmeeStandIn | undefined;
let target: Server | undefined;
const stops: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await smee?.close();
  target?.closeAllConnections();
  await new Promise((r) => (target ? target.close(r) : r(undefined)));
  smee = target = undefined;
});

function recordingLog(): ProxyLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (msg) => void lines.push(`info ${msg}`),
    warn: (obj, msg) => void lines.push(`warn ${msg} ${JSON.stringify(obj)}`),
  };
}

/** A webhook path that records what it receives. */
async function webhookPath(): Promise<{ url: string; got: { headers: IncomingHttpHeaders; body: string }[] }> {
  const got: { headers: IncomingHttpHeaders; body: string }[] = [];
  target = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => target!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(target.address() as AddressInfo).port}/api/github/webhooks`, got };
}

describe('webhook channel forwarding', () => {
  test('a delivery reaches the webhook path with its body bytes and signature as GitHub sent them', async () => {
    smee = await startSmeeStandIn();
    const channel = await channelMaker(smee.base).createChannel();
    expect(channel).toBe(smee.channels[0]);
    const path = await webhookPath();
    const log = recordingLog();
    const forwarder = await forwardWebhooks({ channel: channel!, target: path.url, log });
    stops.push(() => forwarder.stop());
    expect(log.lines.filter((l) => l.startsWith('warn'))).toEqual([]);

    const body = JSON.stringify({ action: 'labeled', issue: { number: 1, title: 'Ünïcode ✓' }, n: [1, 2.5, null] });
    const headers = { 'x-github-event': 'issues', 'x-github-delivery': 'd-1', 'x-hub-signature-256': 'sha256=abc' };
    expect(await smee.deliver(channel!, headers, body)).toBe(200);
    const [got] = await waitFor('the forwarded delivery', () => (path.got.length ? path.got : undefined), 10_000);
    expect(got!.body).toBe(body);
    expect(got!.headers).toMatchObject(headers);
  }, 30_000);

  test('a channel that does not answer at start: a warning, not one per retry, no throw; forwarding starts once it answers', async () => {
    const port = await freePort(); // nothing listens here yet
    const channel = `http://127.0.0.1:${port}/${'a'.repeat(16)}`;
    const path = await webhookPath();
    const log = recordingLog();
    const forwarder = await forwardWebhooks({ channel, target: path.url, log, waitMs: 1_000 });
    stops.push(() => forwarder.stop());
    await new Promise((r) => setTimeout(r, 1_500)); // a few reconnects later
    const warnings = log.lines.filter((l) => l.startsWith('warn'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(2); // the start's, and at most one from the event stream
    expect(warnings.join('\n')).toContain('webhook channel not reachable yet');

    smee = await startSmeeStandIn(port);
    await waitFor('the event stream to reconnect', () => smee!.listeners(channel) === 1, 20_000);
    await smee.deliver(channel, { 'x-github-event': 'ping', 'x-github-delivery': 'd-2' }, '{"zen":"late"}');
    const [got] = await waitFor('the forwarded delivery', () => (path.got.length ? path.got : undefined), 10_000);
    expect(got!.body).toBe('{"zen":"late"}');
  }, 30_000);

  test('forwardTarget: a wildcard listen address becomes loopback', () => {
    expect(forwardTarget('0.0.0.0', 3000, '/api/github/webhooks')).toBe('http://127.0.0.1:3000/api/github/webhooks');
    expect(forwardTarget('[::]', 3000, '/hooks')).toBe('http://[::1]:3000/hooks');
    expect(forwardTarget('127.0.0.1', 3000, '/hooks')).toBe('http://127.0.0.1:3000/hooks');
  });
});
