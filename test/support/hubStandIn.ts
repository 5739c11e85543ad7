/**
 * A loopback stand-in for the Hugging Face Hub's file API, as `frognano model pull` meets it: the tree listing
 * (paged by a Link header), /resolve/ redirecting to a CDN path that honours Range, X-Linked-Etag, bearer tokens.
 * `*.safetensors` files are LFS files (sha256 in the listing), the others git blobs (sha1). The state lets a test
 * cut the CDN's connection once, corrupt the weights, and read the ranges and Authorization headers it saw.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
export const gitSha1 = (b: Buffer) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
const isLfs = (name: string) => name.endsWith('.safetensors');

export interface HubState {
  /** The CDN drops the connection after this many bytes of a weights file, once. */
  cutAfter?: number;
  corrupt?: boolean;
  ranges: string[];
  auth: (string | undefined)[];
}

export class HubStandIn {
  readonly state: HubState = { ranges: [], auth: [] };
  endpoint = '';
  private readonly server: Server;

  constructor(
    readonly repo: string,
    readonly files: Record<string, Buffer>,
    readonly token: string,
    /** Entries per page of the tree listing (a directory entry comes first, as the Hub lists `onnx/`). */
    readonly pageSize = 2,
  ) {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise<void>((r) => this.server.close(() => r()));
  }

  reset(): void {
    Object.assign(this.state, { cutAfter: undefined, corrupt: false, ranges: [], auth: [] });
  }

  private entries(): object[] {
    const files = Object.keys(this.files)
      .sort()
      .map((name) => {
        const body = this.files[name]!;
        return isLfs(name)
          ? { type: 'file', path: name, size: 134, oid: 'a'.repeat(40), lfs: { oid: sha256(body), size: body.length } }
          : { type: 'file', path: name, size: body.length, oid: gitSha1(body) };
      });
    return [{ type: 'directory', path: 'onnx', oid: 'b'.repeat(40), size: 0 }, ...files];
  }

  private tree(cursor: string | null, res: ServerResponse): void {
    const all = this.entries();
    const start = Number(cursor ?? 0);
    const next = start + this.pageSize;
    if (next < all.length) {
      const link = `${this.endpoint}/api/models/${this.repo}/tree/main?recursive=true&cursor=${next}`;
      res.setHeader('link', `<${link}>; rel="next"`);
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(all.slice(start, next)));
  }

  private cdn(name: string, req: IncomingMessage, res: ServerResponse): void {
    let body = this.files[name]!;
    if (this.state.corrupt && isLfs(name)) body = Buffer.from(body).fill(0, 0, 10);
    const range = req.headers.range;
    this.state.ranges.push(`${name}:${range ?? ''}`);
    let start = 0;
    if (range) {
      start = Number(/^bytes=(\d+)-$/.exec(range)![1]);
      res.statusCode = 206;
      res.setHeader('content-range', `bytes ${start}-${body.length - 1}/${body.length}`);
    }
    res.setHeader('content-length', body.length - start);
    const cut = this.state.cutAfter;
    if (cut !== undefined && isLfs(name)) {
      this.state.cutAfter = undefined;
      res.write(body.subarray(start, start + cut), () => res.socket?.destroy());
      return;
    }
    res.end(body.subarray(start));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url!, this.endpoint);
    this.state.auth.push(req.headers.authorization);
    if (url.pathname.startsWith('/cdn/')) return this.cdn(decodeURIComponent(url.pathname.slice(5)), req, res);
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      res.statusCode = 401;
      res.end('{"error":"Invalid credentials"}');
      return;
    }
    if (url.pathname === `/api/models/${this.repo}/tree/main`) return this.tree(url.searchParams.get('cursor'), res);
    const prefix = `/${this.repo}/resolve/main/`;
    const body = url.pathname.startsWith(prefix)
      ? this.files[decodeURIComponent(url.pathname.slice(prefix.length))]
      : undefined;
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    const name = decodeURIComponent(url.pathname.slice(prefix.length));
    res.setHeader('x-linked-etag', `"${isLfs(name) ? sha256(body) : gitSha1(body)}"`);
    res.writeHead(302, { location: `/cdn/${encodeURIComponent(name)}` });
    res.end();
  }
}
