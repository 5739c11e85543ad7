/**
 * Minimal server-sent-events reader for streamed chat completions: yields the `data` of each event.
 * Follows the SSE rules that matter for vLLM/SGLang/llama.cpp: events end at a blank line, several
 * `data:` lines join with "\n", `:` lines are comments (keep-alives), CRLF and LF both end a line.
 */
export async function* readSseData(
  body: ReadableStream<Uint8Array>,
  maxEventBytes = 8 * 1024 * 1024,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let dataBytes = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\n|\r/)) >= 0) {
        // A lone "\r" at the very end may be the first half of "\r\n": wait for more bytes.
        if (buffer[nl] === '\r' && nl === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (data.length) yield data.join('\n');
          data = [];
          dataBytes = 0;
        } else if (line.startsWith('data:')) {
          const field = line.slice(5).replace(/^ /, '');
          dataBytes += field.length;
          if (dataBytes > maxEventBytes) throw new Error(`stream event larger than ${maxEventBytes} bytes`);
          data.push(field);
        }
        // other fields (event:, id:, retry:) and comments are not used by chat completion streams
      }
      if (done) {
        if (buffer.startsWith('data:')) data.push(buffer.slice(5).replace(/^ /, ''));
        if (data.length) yield data.join('\n');
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Watches a response for silence: `signal` aborts when no byte arrived for `idleMs` since start() or the last
 * touch(). A stalled server (a hung engine, a dead proxy) then ends the attempt in `idleMs` instead of holding
 * the run for the whole request timeout.
 */
export class IdleWatch {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  fired = false;

  constructor(private readonly idleMs: number) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fired = true;
      this.controller.abort(new Error(`no bytes for ${this.idleMs} ms`));
    }, this.idleMs);
    this.timer.unref?.();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** The same bytes, touching the watch on each chunk. */
  pipe(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          this.touch();
          controller.enqueue(chunk);
        },
      }),
    );
  }
}
