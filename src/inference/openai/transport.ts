/**
 * HTTP to the model server: one chat-completion attempt (a streamed one ends when the server goes silent), short
 * probe requests, the auth header, and the scrubbing of every text that leaves (no key, no credentials in URLs).
 * Retrying the attempts is retries.ts's job; reading the answer is answer.ts's.
 */
import { redact } from '../../util/redact.js';
import { formatSeconds, parseRetryAfter } from '../retry.js';
import { ModelError } from '../types.js';
import { readCompletion, readStream } from './answer.js';
import { describeHttpError, networkCause, safeJson } from './serverErrors.js';
import { IdleWatch } from './sse.js';
import type { ProbeResponse } from './tokens.js';
import type { ServerUrls } from './urls.js';
import type { WireAssistant } from './wire.js';

const PROBE_TIMEOUT_MS = 15_000;

/** A non-2xx answer, with what retries.ts needs to classify it. */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** No bytes within the stall timeout. */
export class StalledError extends Error {}

export interface TransportOptions {
  apiKey?: string;
  /** Limit for one HTTP attempt, body included. */
  timeoutMs: number;
  /** A streamed answer with no bytes for this long is a stalled server. */
  stallTimeoutMs: number;
  fetch: typeof fetch;
}

export class ServerTransport {
  constructor(
    readonly urls: ServerUrls,
    private readonly opts: TransportOptions,
  ) {}

  get displayUrl(): string {
    return this.urls.displayUrl;
  }

  get timeoutMs(): number {
    return this.opts.timeoutMs;
  }

  /** One chat-completion attempt; a streamed one ends early when the server goes silent. */
  async chatCompletion(
    body: Record<string, unknown>,
    signal: AbortSignal,
    stream: boolean,
    onDelta: (text: string) => void,
  ): Promise<WireAssistant> {
    const watch = stream ? new IdleWatch(this.opts.stallTimeoutMs) : undefined;
    watch?.touch();
    try {
      const res = await this.opts.fetch(`${this.urls.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: this.headers(true, stream),
        body: JSON.stringify(body),
        signal: watch ? AbortSignal.any([signal, watch.signal]) : signal,
      });
      if (!res.ok) {
        const text = await res.text().catch(() => '');
        const message = describeHttpError(this.displayUrl, res.status, res.statusText, text);
        throw new HttpStatusError(res.status, message, text, parseRetryAfter(res.headers.get('retry-after')));
      }
      watch?.touch();
      const streamed = stream && (res.headers.get('content-type') ?? '').includes('text/event-stream');
      if (!streamed) return await readCompletion(res, this);
      return await readStream(res, watch!, onDelta, this);
    } catch (e) {
      if (watch?.fired) {
        const silence = formatSeconds(this.opts.stallTimeoutMs);
        throw new StalledError(`${this.displayUrl} sent nothing for ${silence} (stalled stream).`);
      }
      throw e;
    } finally {
      watch?.stop();
    }
  }

  /** One short request for probes: status, text and JSON, or the network error; never throws. */
  async request(method: 'GET' | 'POST', url: string, body?: unknown, signal?: AbortSignal): Promise<ProbeResponse> {
    try {
      const timeout = AbortSignal.timeout(Math.min(this.opts.timeoutMs, PROBE_TIMEOUT_MS));
      const res = await this.opts.fetch(url, {
        method,
        headers: this.headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      const text = await res.text();
      return { status: res.status, statusText: res.statusText, text, json: safeJson(text) };
    } catch (e) {
      return { status: 0, statusText: '', text: '', json: undefined, error: networkCause(e) };
    }
  }

  /** Removes the api key (even if a server echoes it) and anything secret-shaped. */
  clean(text: string): string {
    let out = text;
    for (const secret of [this.opts.apiKey, this.urls.basicAuth])
      if (secret) out = out.split(secret).join('[REDACTED]');
    return redact(out);
  }

  /** A ModelError whose text is safe to log. */
  error(message: string, retryable?: boolean): ModelError {
    return new ModelError(this.clean(message), retryable);
  }

  private headers(json: boolean, stream = false): Record<string, string> {
    const h: Record<string, string> = { accept: stream ? 'text/event-stream' : 'application/json' };
    if (json) h['content-type'] = 'application/json';
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    else if (this.urls.basicAuth) h.authorization = `Basic ${this.urls.basicAuth}`;
    return h;
  }
}
