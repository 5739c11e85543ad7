/**
 * A local stand-in for smee.io (never the real one in tests), speaking its channel protocol as smee-client reads it:
 *   HEAD|GET /new        -> 307 to a fresh channel `<base>/<id>` (what SmeeClient.createChannel follows)
 *   GET /<id>            -> an EventSource stream: `event: ready`, then one `data: {json}` event per delivery
 *   POST /<id>           -> a delivery (what GitHub posts): the request's headers and `body` (parsed JSON) and `query`
 *                           as one JSON object, sent to every open stream of the channel, as smee.io's server does
 * On 127.0.0.1.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

export interface SmeeStandIn {
  /** e.g. http://127.0.0.1:40123 (what FROGNANO_SMEE_URL takes). */
  base: string;
  /** Channels handed out by /new, in order. */
  channels: string[];
  /** Open event streams per channel id. */
  listeners(channel: string): number;
  /** Posts a delivery to a channel as GitHub would: the exact body bytes, GitHub's headers. */
  deliver(channel: string, headers: Record<string, string>, body: string): Promise<number>;
  close(): Promise<void>;
}

/** `port`: a fixed one (a client already retrying there), else any free one. */
export async function startSmeeStandIn(port = 0): Promise<SmeeStandIn> {
  const streams = new Map<string, Set<ServerResponse>>();
  const channels: string[] = [];
  let base = '';
  const server = createServer((req, res) => void route(req, res));
  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', base).pathname;
    if (path === '/new') {
      const channel = `${base}/${randomBytes(8).toString('hex')}`;
      channels.push(channel);
      return void res.writeHead(307, { location: channel }).end();
    }
    const id = path.slice(1);
    if (!/^[0-9a-f]{16}$/.test(id)) return void res.writeHead(404).end();
    if (req.method === 'GET') return openStream(id, res);
    if (req.method === 'POST') return broadcast(id, req, res);
    res.writeHead(405).end();
  }
  function openStream(id: string, res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write('event: ready\ndata: {}\n\n');
    const set = streams.get(id) ?? new Set();
    streams.set(id, set);
    set.add(res);
    res.on('close', () => set.delete(res));
  }
  async function broadcast(id: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const query = Object.fromEntries(new URL(req.url ?? '/', base).searchParams);
    const event = {
      ...req.headers,
      body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      query,
      timestamp: Date.now(),
    };
    for (const s of streams.get(id) ?? []) s.write(`data: ${JSON.stringify(event)}\n\n`);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  }
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    channels,
    listeners: (channel) => streams.get(channel.split('/').pop()!)?.size ?? 0,
    deliver: async (channel, headers, body) =>
      (await fetch(channel, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }))
        .status,
    close: async () => {
      for (const set of streams.values()) for (const s of set) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
