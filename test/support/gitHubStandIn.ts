/**
 * GitHub's REST API for programs a test starts as child processes (the app via `npm start`, a runner via
 * `npm run runner`), which nock cannot reach: a real HTTP server on 127.0.0.1 that relays each request to
 * https://api.github.com inside the test process, where the test's nock routes answer it (the same routes an
 * in-process test registers: recordGitHub, nockPermission ...). A child points at it with
 * `GHE_HOST=127.0.0.1:<port> GHE_PROTOCOL=http` (Probot: `<base>/api/v3`) or `FROGNANO_GITHUB_API_URL=<base>/api/v3`;
 * the `/api/v3` prefix is dropped on the way. Every request is recorded (method, path) for assertions.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const GITHUB_API = 'https://api.github.com';

export interface GitHubStandIn {
  /** http://127.0.0.1:<port> */
  base: string;
  /** `127.0.0.1:<port>`, what GHE_HOST takes (with GHE_PROTOCOL=http). */
  host: string;
  /** Every relayed request, `METHOD /path` (query dropped), in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Hop-by-hop and body-framing headers fetch sets itself. */
const DROPPED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'content-encoding',
  'keep-alive',
]);

export async function startGitHubStandIn(): Promise<GitHubStandIn> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    relay(req, res, requests).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `stand-in: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base: `http://${host}`,
    host,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function relay(req: IncomingMessage, res: ServerResponse, requests: string[]): Promise<void> {
  const path = (req.url ?? '/').replace(/^\/api\/v3(?=\/)/, '');
  requests.push(`${req.method} ${path.split('?')[0]}`);
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!DROPPED.has(k) && typeof v === 'string') headers[k] = v;
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && chunks.length > 0;
  const answer = await fetch(`${GITHUB_API}${path}`, {
    method: req.method,
    headers,
    body: hasBody ? Buffer.concat(chunks) : undefined,
    redirect: 'manual',
  });
  const out: Record<string, string> = {};
  answer.headers.forEach((v, k) => {
    if (!DROPPED.has(k)) out[k] = v;
  });
  const body = Buffer.from(await answer.arrayBuffer());
  res.writeHead(answer.status, out).end(body);
}
