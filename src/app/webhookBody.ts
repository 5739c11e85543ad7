import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Probot } from 'probot';

/** GitHub caps webhook payloads at 25 MB; anything bigger did not come from GitHub. */
export const MAX_WEBHOOK_BODY_BYTES = 25 * 1024 * 1024;

type Middleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: () => void,
) => Promise<boolean | void> | boolean | void;

/**
 * Reads a POST body with a byte cap before `inner` (the @octokit/webhooks middleware) sees the request,
 * and answers 413 without reading at all when Content-Length already says too much. Without it the
 * middleware buffers any body whole before it checks the signature. The body read here is handed on
 * as `req.body` (a string), which the middleware takes instead of reading the stream again.
 */
export function capWebhookBody(inner: Middleware, maxBytes = MAX_WEBHOOK_BODY_BYTES): Middleware {
  return async (req, res, next) => {
    if (req.method !== 'POST') return inner(req, res, next);
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) return tooLarge(req, res, maxBytes);
    const body = await readCapped(req, maxBytes);
    if (body === null) return tooLarge(req, res, maxBytes);
    (req as IncomingMessage & { body?: string }).body = body;
    return inner(req, res, next);
  };
}

/**
 * Probot's Server asks its Probot for the webhook middleware once, when it starts (after the app is loaded);
 * wrapping that method puts the cap in front of every body read, wherever the middleware is mounted.
 */
export function capProbotWebhookBodies(probot: Probot, maxBytes = MAX_WEBHOOK_BODY_BYTES): void {
  const original = probot.getNodeMiddleware.bind(probot);
  probot.getNodeMiddleware = async (opts) =>
    capWebhookBody(await original(opts), maxBytes) as Awaited<ReturnType<typeof original>>;
}

/** The body as UTF-8 text (as the middleware would decode it), or null once it passes `maxBytes`. */
function readCapped(req: IncomingMessage, maxBytes: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      fn();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      chunks.length = 0;
      settle(() => resolve(null));
    };
    req.on('data', onData);
    req.once('end', () => settle(() => resolve(Buffer.concat(chunks).toString('utf8'))));
    req.once('error', (err) => settle(() => reject(err)));
    // A sender that hangs up mid-body ends here too, instead of leaving the promise (and its chunks) behind.
    req.once('close', () => settle(() => reject(new Error('the webhook request was aborted before its body ended'))));
  });
}

/** How long the rest of a refused body is read and dropped, so the sender sees the 413 before the connection goes. */
const LINGER_MS = 2000;

function tooLarge(req: IncomingMessage, res: ServerResponse, maxBytes: number): true {
  const text = JSON.stringify({ error: `Payload too large: webhook bodies are limited to ${maxBytes} bytes` });
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  // Closing at once would reset a sender still writing, often before it reads the answer. Drop what still
  // comes (nothing is kept) for a short while, then cut the connection whatever the sender does.
  req.resume();
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.socket.once('close', () => clearTimeout(timer));
  return true;
}
