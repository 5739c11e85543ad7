/**
 * What the model servers' errors mean: the detail worth quoting, whether it is a full context (and the numbers
 * in it), whether a 500 is a deterministic rejection that a retry cannot change, and a network error's cause.
 * Wordings recorded from vLLM, llama.cpp's llama-server and SGLang (see test/fixtures/model-servers/).
 */

/** Error bodies are quoted in messages up to this length. */
const ERROR_DETAIL_CHARS = 400;

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function excerpt(text: string, max = ERROR_DETAIL_CHARS): string {
  const one = text.trim().replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max)}...` : one || '(empty body)';
}

interface ErrorBody {
  message?: string;
  type?: string;
  /** llama.cpp adds these to `exceed_context_size_error`. */
  n_prompt_tokens?: number;
  n_ctx?: number;
}

/** The error object of an OpenAI `{error:{...}}`, vLLM legacy `{object:"error", message}`, or FastAPI `{detail}` body. */
export function errorBody(text: string): ErrorBody {
  const json = safeJson(text) as Record<string, unknown> | undefined;
  if (!json || typeof json !== 'object') return { message: text };
  const inner = typeof json.error === 'object' && json.error !== null ? (json.error as Record<string, unknown>) : json;
  const candidate = inner.message ?? (typeof json.error === 'string' ? json.error : undefined) ?? json.detail ?? text;
  const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
  return {
    message: typeof candidate === 'string' ? candidate : JSON.stringify(candidate),
    type: typeof inner.type === 'string' ? inner.type : undefined,
    n_prompt_tokens: num(inner.n_prompt_tokens),
    n_ctx: num(inner.n_ctx),
  };
}

/** The useful part of an error body, one line. */
export function errorDetail(text: string): string {
  return excerpt(errorBody(text).message ?? text);
}

/** Joins sentences without doubling the period a server already put at the end of its message. */
export function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

export function describeHttpError(url: string, status: number, statusText: string, body: string): string {
  const hint =
    status === 401 || status === 403
      ? ' Check FROGNANO_OPENAI_API_KEY.'
      : status === 404
        ? ' Check that the base URL ends in /v1 and FROGNANO_OPENAI_MODEL names a served model.'
        : '';
  return `${url} answered ${status}${statusText ? ` ${statusText}` : ''}: ${sentence(errorDetail(body))}${hint}`;
}

export interface ContextOverflowFacts {
  /** The server's context length, when its message says it. */
  contextLength?: number;
  /** The prompt's size in tokens, when the message says it. */
  promptTokens?: number;
}

/**
 * Phrases that mean "the prompt plus max_tokens does not fit the context", across servers and versions.
 * Kept specific so that, say, a gRPC "context deadline exceeded" stays a model error.
 */
const OVERFLOW_PATTERNS: RegExp[] = [
  /cannot be greater than max_model_len/i, // vLLM >= 0.11: "max_tokens=8192 cannot be greater than max_model_len=4096"
  /maximum context length/i, // vLLM, SGLang, OpenAI
  /context_length_exceeded/i,
  /reduce the length/i,
  /longer than the maximum model length/i, // vLLM V1: "The decoder prompt (length N) is longer than the maximum model length of M"
  /longer than the model's context length/i, // SGLang
  /exceeds the available context size/i, // llama.cpp
  /larger than the max context size/i, // llama.cpp (context shift off)
  /exceed_context_size_error/i, // llama.cpp error type
  /exceeds the context window/i,
  /prompt is too long/i,
];

/** undefined unless the error says the context is full; otherwise the numbers the server gave. */
export function contextOverflowFacts(body: ErrorBody): ContextOverflowFacts | undefined {
  const text = `${body.type ?? ''} ${body.message ?? ''}`;
  if (!OVERFLOW_PATTERNS.some((p) => p.test(text))) return undefined;
  const first = (...patterns: RegExp[]) => {
    for (const p of patterns) {
      const m = p.exec(text);
      if (m) return Number(m[1]);
    }
    return undefined;
  };
  return {
    contextLength:
      body.n_ctx ??
      first(
        /max_model_len=(?:max_total_tokens=)?(\d+)/,
        /maximum context length (?:is|of) (\d+)/i,
        /maximum model length of (\d+)/i,
        /context length \((\d+) tokens\)/i,
        /available context size \((\d+) tokens\)/i,
        /max context size \((\d+) tokens\)/i,
      ),
    promptTokens:
      body.n_prompt_tokens ??
      first(
        /request has (\d+) input tokens/i,
        /(\d+) (?:tokens )?in the messages/i,
        /your (?:request|prompt) (?:has|contains) (\d+) tokens/i,
        /decoder prompt \(length (\d+)\)/i,
        /the input \((\d+) tokens\)/i,
        /request \((\d+) tokens\) exceeds/i,
        /input \((\d+) tokens\) is larger/i,
      ),
  };
}

/** vLLM without `--enable-auto-tool-choice --tool-call-parser`: tools with tool_choice "auto" are refused. */
export function isAutoToolChoiceRejection(body: ErrorBody): boolean {
  return /"auto" tool choice requires --enable-auto-tool-choice/.test(body.message ?? '');
}

/**
 * A 500 that says the request itself is wrong (a validation or template error surfaced as an internal error):
 * the same request gets the same answer, so it is not retried.
 */
export function isDeterministicServerError(body: ErrorBody): boolean {
  if (body.type && /^(BadRequestError|invalid_request_error|ValidationError|not_supported_error)$/i.test(body.type))
    return true;
  return /validation error|ValidationError|is not valid under|must be (?:a|an|one of|at least|less|greater)|unsupported|not supported|template|failed to (?:parse|format)/i.test(
    body.message ?? '',
  );
}

/** fetch() hides the socket error in `cause`; that is the part a person can act on. */
export function networkCause(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  const cause = err?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? err?.message ?? String(e);
}
