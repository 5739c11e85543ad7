import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';
import { admits, type EgressPolicy } from './allowlist.js';
import { addressChecker, type AddressCheck } from './addresses.js';
import { dnsResolver, type ResolveHost } from './resolve.js';
import { connectTarget, forwardTarget, type Target } from './target.js';

export interface EgressCaps {
  /** Connections open at once (tunnels and forwarded requests). */
  maxConnections: number;
  /** Bytes through the proxy in both directions, over its life; past it every connection is cut. */
  maxBytes: number;
  /** A connection with no traffic this long is cut. */
  idleMs: number;
  /** Connecting to the checked address. */
  connectTimeoutMs: number;
  /** Request line and headers. */
  maxHeaderBytes: number;
}

export const DEFAULT_EGRESS_CAPS: EgressCaps = {
  maxConnections: 64,
  maxBytes: 4 * 1024 ** 3,
  idleMs: 60_000,
  connectTimeoutMs: 15_000,
  maxHeaderBytes: 16 * 1024,
};

/** One refused request, as a maintainer needs it to extend the allowlist. */
export interface BlockedRequest {
  host: string;
  port: number;
  reason: string;
  /** Identical refusals (same host, port, reason) are counted, not repeated. */
  count: number;
}

export interface EgressProxyOptions {
  policy: EgressPolicy;
  resolve?: ResolveHost;
  check?: AddressCheck;
  caps?: Partial<EgressCaps>;
}

const MAX_BLOCKED = 200;

/** Connected or refused: the checked address to connect to. */
type Decision = { ok: true; address: string } | { ok: false; reason: string };

/**
 * The host-side egress proxy of setup commands with network: plain HTTP forwarding (absolute-form) and CONNECT,
 * nothing else. It resolves the name itself, refuses when any address is blocked, and connects to the address it
 * checked. Listens on a unix socket (the sandbox's only way out) or, for tests, a loopback port.
 */
export class EgressProxy {
  private readonly server: http.Server;
  private readonly caps: EgressCaps;
  private readonly resolve: ResolveHost;
  private readonly check: AddressCheck;
  private readonly refused = new Map<string, BlockedRequest>();
  private readonly open = new Set<Socket>();
  private bytes = 0;

  constructor(private readonly opts: EgressProxyOptions) {
    this.caps = { ...DEFAULT_EGRESS_CAPS, ...opts.caps };
    this.resolve = opts.resolve ?? dnsResolver();
    this.check = opts.check ?? addressChecker();
    this.server = http.createServer({ maxHeaderSize: this.caps.maxHeaderBytes }, (req, res) => {
      void this.onRequest(req, res);
    });
    this.server.on('connect', (req: IncomingMessage, sock: Socket, head: Buffer) => {
      void this.onConnect(req, sock, head);
    });
    this.server.on('clientError', (_e, sock: Socket) => {
      if (sock.writable) sock.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    });
  }

  /** Listens on a unix socket path or a loopback TCP port (0: any); resolves to the port or path. */
  listen(where: string | number): Promise<string | number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      const done = () => {
        const a = this.server.address();
        resolve(typeof a === 'string' ? a : (a?.port ?? 0));
      };
      if (typeof where === 'string') this.server.listen(where, done);
      else this.server.listen(where, '127.0.0.1', done);
    });
  }

  /** The refused requests so far, in the order first seen (at most 200 distinct). */
  blocked(): BlockedRequest[] {
    return [...this.refused.values()];
  }

  /** Stops listening and cuts every connection. */
  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private refuse(host: string, port: number, reason: string): void {
    const key = `${host}\0${port}\0${reason}`;
    const seen = this.refused.get(key);
    if (seen) seen.count++;
    else if (this.refused.size < MAX_BLOCKED) this.refused.set(key, { host, port, reason, count: 1 });
  }

  /** Policy, then resolution, then the address check of every address the name has. */
  private async decide(t: Target): Promise<Decision> {
    if (!t.ok) return { ok: false, reason: t.why };
    if (this.open.size >= this.caps.maxConnections) return { ok: false, reason: 'too many connections' };
    if (this.bytes >= this.caps.maxBytes) return { ok: false, reason: 'byte limit reached' };
    const refusal = t.ip && this.opts.policy.mode !== 'all' ? 'not on the allowlist' : admits(this.opts.policy, t);
    if (refusal) return { ok: false, reason: refusal };
    let addresses: string[];
    try {
      addresses = t.ip ? [t.host] : await this.resolve(t.host);
    } catch {
      return { ok: false, reason: 'name does not resolve' };
    }
    for (const a of addresses) {
      const why = this.check(a);
      if (why) return { ok: false, reason: `resolves to ${why}` };
    }
    return { ok: true, address: addresses[0]! };
  }

  private async onConnect(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    const t = connectTarget(req.url ?? '');
    const d = await this.decide(t);
    if (!d.ok) {
      this.refuse(t.host, t.port, d.reason);
      client.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\negress proxy: ${d.reason}\r\n`);
      return;
    }
    const upstream = net.connect({ host: d.address, port: t.port, timeout: this.caps.connectTimeoutMs });
    this.track(client);
    this.track(upstream);
    upstream.once('timeout', () => upstream.destroy(new Error('connect timeout')));
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setTimeout(this.caps.idleMs);
      client.setTimeout(this.caps.idleMs);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      this.pipeCounted(client, upstream);
      this.pipeCounted(upstream, client);
    });
    upstream.once('error', () => {
      if (!connected) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      else client.destroy();
    });
    client.once('error', () => upstream.destroy());
    client.once('timeout', () => client.destroy());
    client.once('close', () => upstream.destroy());
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const t = forwardTarget(req.url ?? '', req.headers.host);
    const d = await this.decide(t);
    if (!d.ok || !t.ok) {
      const reason = d.ok ? 'bad request' : d.reason;
      this.refuse(t.host, t.port, reason);
      res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' }).end(`egress proxy: ${reason}\n`);
      return;
    }
    const headers: http.OutgoingHttpHeaders = { ...req.headers, host: t.hostHeader };
    for (const h of ['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'upgrade'])
      delete headers[h];
    const up = http.request({
      host: d.address,
      port: t.port,
      method: req.method,
      path: t.path,
      headers,
      setHost: false,
      agent: false,
      timeout: this.caps.idleMs,
    });
    up.once('socket', (s) => this.track(s));
    up.once('timeout', () => up.destroy(new Error('idle')));
    up.once('response', (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      this.pipeCounted(r, res);
    });
    up.once('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    this.pipeCounted(req, up);
  }

  private track(s: Socket): void {
    this.open.add(s);
    s.once('close', () => this.open.delete(s));
  }

  /** Pipes with the byte cap: past it, every connection is cut. */
  private pipeCounted(from: NodeJS.ReadableStream, to: NodeJS.WritableStream): void {
    from.on('data', (c: Buffer) => {
      this.bytes += c.length;
      if (this.bytes > this.caps.maxBytes) {
        this.refuse('*', 0, 'byte limit reached');
        for (const s of this.open) s.destroy();
      }
    });
    from.pipe(to);
  }
}
