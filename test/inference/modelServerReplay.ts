/**
 * Replays recorded model-server responses (test/fixtures/model-servers/<server>/<case>.http: status line,
 * headers, blank line, body as the server sent it) from a real HTTP server on 127.0.0.1, so the client meets
 * them through a socket: SSE bodies go out event by event, and a case can stall or drop mid-stream.
 */
import { expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenAIBackend, type OpenAIBackendOptions } from '../../src/inference/openai/index.js';
import { ModelError } from '../../src/inference/types.js';

export const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'model-servers');

export interface HttpFixture {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function loadFixture(server: string, name: string): HttpFixture {
  const raw = readFileSync(path.join(FIXTURES, server, `${name}.http`), 'utf8');
  const split = raw.indexOf('\r\n\r\n');
  const [statusLine, ...headerLines] = raw.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const i = line.indexOf(':');
    const key = line.slice(0, i).trim().toLowerCase();
    // Framing is the replaying server's business; the recorded body is already decoded.
    if (key !== 'content-length' && key !== 'transfer-encoding' && key !== 'date')
      headers[key] = line.slice(i + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(split + 4) };
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface ReplayOptions {
  /** Pause between SSE events. */
  pauseMs?: number;
  /** After this many events, go silent (keep the socket open). */
  stallAfterEvents?: number;
  /** After this many events, drop the connection. */
  cutAfterEvents?: number;
}

/** Writes a fixture to a response, event by event when it is a stream. */
export async function replay(res: ServerResponse, fx: HttpFixture, opts: ReplayOptions = {}): Promise<void> {
  res.writeHead(fx.status, fx.headers);
  if (!(fx.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    res.end(fx.body);
    return;
  }
  const events = fx.body.split(/(?<=\n\n)/);
  for (const [i, event] of events.entries()) {
    if (i === opts.stallAfterEvents) return; // silent, socket left open
    if (i === opts.cutAfterEvents) {
      res.destroy();
      return;
    }
    if (res.destroyed) return;
    res.write(event);
    await new Promise((r) => setTimeout(r, opts.pauseMs ?? 1));
  }
  res.end();
}

export type Handler = (req: Recorded, res: ServerResponse) => void | Promise<void>;

/**
 * A scripted server: each request takes the next handler (the last one repeats). With `answerDiscovery: false` the
 * backend's context-length discovery (GET /v1/models, /props) gets a 404 and is not recorded, until a test sets
 * `answerDiscovery` (each script() restores the default).
 */
export class ScriptedServer {
  readonly requests: Recorded[] = [];
  private handlers: Handler[] = [];
  private readonly server: Server;
  url = '';
  answerDiscovery: boolean;

  constructor(private readonly o: { answerDiscovery?: boolean } = {}) {
    this.answerDiscovery = o.answerDiscovery ?? true;
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const rec: Recorded = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: text ? JSON.parse(text) : undefined,
        };
        if (!this.answerDiscovery && rec.method === 'GET' && (rec.path === '/v1/models' || rec.path === '/props')) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{"detail":"Not Found"}');
          return;
        }
        this.requests.push(rec);
        const handler = this.handlers.length > 1 ? this.handlers.shift()! : this.handlers[0];
        if (!handler) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"no handler scripted"}}');
          return;
        }
        void handler(rec, res);
      });
    });
  }

  script(...handlers: Handler[]): void {
    this.handlers = handlers;
    this.requests.length = 0;
    this.answerDiscovery = this.o.answerDiscovery ?? true;
  }

  /** Requests to the chat endpoint only (discovery and token counting go elsewhere). */
  get chats(): Recorded[] {
    return this.requests.filter((r) => r.path.endsWith('/chat/completions'));
  }

  async start(port = 0): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Routes by path: `/v1/models`, `/tokenize`, ... answer from `routes`; chat completions from the scripted fixtures
 * in order (the last repeats). Unknown paths get a 404 like vLLM's.
 */
export function router(
  routes: Record<string, HttpFixture | undefined>,
  chat: (HttpFixture | ((req: Recorded, res: ServerResponse) => void | Promise<void>))[],
  opts: ReplayOptions = {},
): Handler {
  const queue = [...chat];
  return async (req, res) => {
    const route = Object.keys(routes).find((p) => req.path === p);
    if (route !== undefined) {
      const fx = routes[route];
      if (fx) return replay(res, fx);
    } else if (req.path.endsWith('/chat/completions')) {
      const next = queue.length > 1 ? queue.shift()! : queue[0]!;
      return typeof next === 'function' ? next(req, res) : replay(res, next, opts);
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"detail":"Not Found"}');
  };
}

/** The backend under test against `server`: short retry delays and no jitter, so retry tests take milliseconds. */
export function testBackend(server: { url: string }, extra: Partial<OpenAIBackendOptions> = {}): OpenAIBackend {
  return new OpenAIBackend({
    baseUrl: server.url,
    model: 'frognano-4b',
    retry: { baseDelayMs: 10, maxDelayMs: 40 },
    random: () => 0.5,
    ...extra,
  });
}

/** The ModelError a call fails with (the test fails if it succeeds or throws anything else). */
export async function rejection(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return e as ModelError;
  }
  throw new Error('expected the call to fail');
}
