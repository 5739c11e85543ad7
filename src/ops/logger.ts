/**
 * The process logger: pino (the same library Probot 14 uses, so the app can hand it to Probot) with
 * secrets scrubbed at three levels, because a single leaked installation token is worth more to an
 * attacker than any log line is to us:
 *   1. every string argument and every string field (deeply) goes through src/util/redact,
 *   2. fields whose NAME says they hold a secret (token, privateKey, authorization ...) are censored
 *      whatever their value looks like (pino `redact` paths plus a key check in the deep scrub),
 *   3. a last pass over the finished JSON line catches anything the first two missed (registered
 *      secret values, token patterns inside keys or bindings).
 */
import pino, { type DestinationStream, type Logger, type LoggerOptions as PinoOptions } from 'pino';
import { REDACTED, redact } from '../util/redact.js';
import { readSetting } from '../util/settings.js';

export type { Logger } from 'pino';

/** Field names whose values are secrets no matter what they look like (exact names, case-insensitive). */
const SECRET_KEY =
  /^(token|access_?token|refresh_?token|installation_?token|id_?token|private_?key|password|passwd|secret|client_?secret|webhook_?secret|authorization|proxy-authorization|api_?key|x-api-key|cookie|set-cookie)$/i;

/** pino `redact` paths: the same names at the top level, one level down and in HTTP headers. */
export const REDACT_PATHS: string[] = [
  'token',
  'accessToken',
  'installationToken',
  'privateKey',
  'private_key',
  'password',
  'secret',
  'webhookSecret',
  'clientSecret',
  'apiKey',
  'authorization',
  '*.token',
  '*.accessToken',
  '*.installationToken',
  '*.privateKey',
  '*.private_key',
  '*.password',
  '*.secret',
  '*.webhookSecret',
  '*.clientSecret',
  '*.apiKey',
  '*.authorization',
  'headers.authorization',
  'headers.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  'request.headers.authorization',
  'err.request.headers.authorization',
  'error.request.headers.authorization',
];

/** Deeper than this a logged object is summarised; log objects are small, deep ones are accidents. */
const MAX_DEPTH = 8;

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * A scrubbed copy of a log value. Plain objects, arrays and errors are walked; other class instances
 * (requests, buffers ...) are left for pino's serializers and the final line pass.
 */
export function scrubValue(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === 'string') return redact(value);
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Object]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => scrubValue(v, depth + 1, seen));
    if (value instanceof Error) {
      // Errors lose their message/stack in JSON.stringify; keep them (scrubbed) in the shape pino's err serializer uses.
      const out: Record<string, unknown> = { type: value.name, message: redact(value.message) };
      if (value.stack) out.stack = redact(value.stack);
      for (const [k, v] of Object.entries(value)) out[k] = scrubField(k, v, depth, seen);
      if ('cause' in value && value.cause !== undefined) out.cause = scrubValue(value.cause, depth + 1, seen);
      return out;
    }
    if (!isPlainObject(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrubField(k, v, depth, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}

function scrubField(key: string, v: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (SECRET_KEY.test(key) && v !== null && v !== undefined && typeof v !== 'number' && typeof v !== 'boolean') {
    return REDACTED;
  }
  return scrubValue(v, depth + 1, seen);
}

/** GitHub token shapes: letters, digits and `_` only, so replacing them can never break JSON. */
const JSON_SAFE_TOKEN = /\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})/g;

/**
 * Final pass over a serialized line. redact() works on text, so on a whole JSON line a pattern could
 * in theory match across two fields and break the JSON; such a line keeps what the field-level scrub
 * left (which already ran redact() on every string) with only the JSON-safe token patterns applied.
 */
export function scrubLine(line: string): string {
  const cleaned = redact(line);
  if (cleaned === line) return line;
  const body = cleaned.endsWith('\n') ? cleaned.slice(0, -1) : cleaned;
  try {
    JSON.parse(body);
    return cleaned;
  } catch {
    return line.replace(JSON_SAFE_TOKEN, REDACTED);
  }
}

/**
 * pino-http (Probot's request log) makes an Error for every 5xx answer, "failed with status code 503", whose stack
 * points into pino-http itself: a /readyz probe while Redis is down would log a useless stack every few seconds.
 */
const HTTP_STATUS_ERROR = /^failed with status code \d{3}$/;
function withoutUselessStack(obj: Record<string, unknown>): Record<string, unknown> {
  const err = obj.err as { message?: unknown; stack?: unknown } | undefined;
  if (!err || typeof err.message !== 'string' || !HTTP_STATUS_ERROR.test(err.message)) return obj;
  // Its message alone: an object would get an empty `stack` back from pino-http's own err serializer.
  return { ...obj, err: err.message };
}

export interface CreateLoggerOptions {
  /** pino level; default $LOG_LEVEL or `info`. */
  level?: string;
  /** `name` field on every line (e.g. `app`, `runner`). */
  name?: string;
  /** Where lines go; default stdout. Tests pass a stream to inspect. */
  destination?: DestinationStream;
  /** Extra fields on every line. */
  base?: Record<string, unknown>;
}

export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const options: PinoOptions = {
    level: opts.level ?? readSetting(process.env, 'LOG_LEVEL') ?? 'info',
    name: opts.name,
    base: { pid: process.pid, ...(opts.base ?? {}) },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    timestamp: pino.stdTimeFunctions.isoTime,
    // formatters.log has already turned errors into scrubbed plain objects; pino's own err serializer would relabel them `Object`.
    serializers: {
      err: (e: unknown) => (e instanceof Error ? scrubValue(pino.stdSerializers.err(e)) : e),
    },
    formatters: {
      bindings: (bindings) => scrubValue(bindings) as Record<string, unknown>,
      log: (obj) => withoutUselessStack(scrubValue(obj) as Record<string, unknown>),
    },
    hooks: {
      logMethod(args, method) {
        // Message strings and interpolation values (`log.info('cloning %s', url)`); the merge object is scrubbed by formatters.log.
        const cleaned = args.map((a, i) => (typeof a === 'string' ? redact(a) : i === 0 ? a : scrubValue(a)));
        return method.apply(this, cleaned as Parameters<typeof method>);
      },
      streamWrite: scrubLine,
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/**
 * The process-wide logger (JSON lines on stdout; pipe through `pino-pretty` to read them by eye).
 * No `name` here: pino writes a child's `name` as a second key, so children (`app`, `probot`) name themselves.
 */
export const logger: Logger = createLogger();

/** A child logger that puts the job id (and any extra fields) on every line it writes. */
export function withJob(log: Logger, jobId: string, extra: Record<string, unknown> = {}): Logger {
  return log.child({ jobId, ...extra });
}
