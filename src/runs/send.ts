import type { ServerResponse } from 'node:http';

/**
 * A response body written in chunks, each only once the reader took the one before: a page is never one string in
 * the socket's buffer, so a client that asks and never reads holds one chunk, not the page, and is cut off after
 * `stallMs`. Between chunks the event loop runs, so one large answer does not stall the other requests.
 */
export interface SendOptions {
  /** About this many characters per write. */
  chunkChars: number;
  /** A reader that takes nothing for this long is disconnected. */
  stallMs: number;
}

export const SEND_DEFAULTS: SendOptions = { chunkChars: 64 * 1024, stallMs: 30_000 };

/** Resolves true once the socket drained, false when the reader stalled past `stallMs` (then destroyed) or left. */
function drained(res: ServerResponse, stallMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      res.off('close', onClose);
      if (!ok) res.destroy();
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), stallMs);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/** The end of a chunk at `end` or just before it, so a surrogate pair is never split between two writes. */
function cutAt(text: string, end: number): number {
  if (end >= text.length) return text.length;
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

async function write(res: ServerResponse, text: string, o: SendOptions): Promise<boolean> {
  for (let start = 0; start < text.length;) {
    const end = cutAt(text, start + o.chunkChars);
    if (res.destroyed) return false;
    if (!res.write(text.slice(start, end)) && !(await drained(res, o.stallMs))) return false;
    start = end;
    await new Promise<void>((r) => setImmediate(r));
  }
  return true;
}

/**
 * Writes the pieces (a page's generator, a raw JSON walk) as the body and ends the response; the head must be
 * written. Pieces are only pulled as the reader keeps up. Resolves false when the reader was cut off or left.
 */
export async function sendChunks(
  res: ServerResponse,
  pieces: Iterable<string>,
  o: SendOptions = SEND_DEFAULTS,
): Promise<boolean> {
  let pending: string[] = [];
  let size = 0;
  for (const piece of pieces) {
    pending.push(piece);
    size += piece.length;
    if (size < o.chunkChars) continue;
    const text = pending.join('');
    pending = [];
    size = 0;
    if (!(await write(res, text, o))) return false;
  }
  if (size > 0 && !(await write(res, pending.join(''), o))) return false;
  res.end();
  return true;
}
