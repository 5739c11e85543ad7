/**
 * ModelBackend over an OpenAI-compatible `/v1/chat/completions` endpoint: vLLM, SGLang or the
 * llama.cpp server running FrogNano on another machine.
 *
 * The server may or may not parse tool calls itself (vLLM needs `--enable-auto-tool-choice
 * --tool-call-parser qwen3_coder`). When it returns `tool_calls` we use them; when it returns the raw
 * `<tool_call>` markup as content we parse it with the same parser the onnx backend uses, so the
 * Leaf loop sees the same thing either way.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { redact } from '../util/redact.js';
import { parseAssistantOutput, splitReasoning } from './toolCallParser.js';
import {
  DEFAULT_RETRY_POLICY,
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfter,
  sleep as defaultSleep,
  type RetryPolicy,
} from './retry.js';
import { readSseData } from './sse.js';
import {
  ModelError,
  type BackendInfo,
  type ChatMessage,
  type FinishReason,
  type GenerateOptions,
  type GenerateResult,
  type ModelBackend,
  type ToolCall,
  type ToolSpec,
} from './types.js';

export interface OpenAIBackendOptions {
  /** Up to and including `/v1`, e.g. `http://gpu-box:8000/v1`. */
  baseUrl: string;
  /** The served model name (`--served-model-name` in vLLM). */
  model: string;
  apiKey?: string;
  /** Limit for one HTTP attempt, body included (a full 8K-token turn must fit). Default 600 s. */
  timeoutMs?: number;
  /** Retries on 429, 5xx and network errors. Default 4. */
  maxRetries?: number;
  retry?: Partial<Omit<RetryPolicy, 'maxRetries'>>;
  /** Context window, when known; otherwise learnt from the server's model list if it says. */
  contextLength?: number;
  /** Extra request fields, e.g. `{ chat_template_kwargs: { enable_thinking: false } }`. */
  extraBody?: Record<string, unknown>;
  /** Injection points for tests; production uses the defaults. */
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  /** Told about each retry before its wait (for logs). */
  onRetry?: (info: { retry: number; delayMs: number; reason: string }) => void;
}

export interface PingResult {
  ok: boolean;
  /** One line for `frognano doctor`. */
  message: string;
  models: string[];
}

const DEFAULT_TIMEOUT_MS = 600_000;
const PROBE_TIMEOUT_MS = 15_000;
/** Error bodies are quoted in messages up to this length. */
const ERROR_DETAIL_CHARS = 400;

const WireToolCallSchema = z.object({
  id: z.string().nullish(),
  function: z.object({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

const UsageSchema = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
});
type Usage = z.infer<typeof UsageSchema>;

const CompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          // vLLM < 0.10 and llama.cpp say reasoning_content; newer vLLM says reasoning.
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
          tool_calls: z.array(WireToolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

const ChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().nullish(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: UsageSchema.nullish(),
  error: z.unknown().optional(),
});

const ModelListSchema = z.object({
  data: z.array(z.object({ id: z.string(), max_model_len: z.number().nullish() })),
});

/** An assistant turn as the server gave it, before tool-call parsing. */
interface WireAssistant {
  content: string;
  reasoning: string;
  toolCalls: { id?: string | null; name: string; arguments?: string | Record<string, unknown> | null }[];
  finishReason?: string | null;
  usage?: Usage | null;
}

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The stream broke after text was already handed to onToken: a retry would repeat it. */
class StreamBrokenError extends Error {}

export class OpenAIBackend implements ModelBackend {
  private readonly baseUrl: string;
  private readonly displayUrl: string;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly sleepImpl: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  /** From `http://user:pass@host/v1`: fetch refuses credentials in URLs, so they travel as a header. */
  private readonly basicAuth?: string;
  private contextLength?: number;
  /** Which tokenizer endpoint the server has, found on first use. */
  private tokenizer?: 'vllm' | 'llamacpp' | 'none';

  constructor(private readonly opts: OpenAIBackendOptions) {
    const { url, basicAuth } = splitCredentials(opts.baseUrl.replace(/\/+$/, ''));
    this.baseUrl = url;
    this.basicAuth = basicAuth;
    this.displayUrl = displayUrl(this.baseUrl);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...opts.retry, maxRetries: opts.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries };
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleepImpl = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.contextLength = opts.contextLength;
  }

  info(): BackendInfo {
    const info: BackendInfo = { backend: 'openai', model: this.opts.model, device: `remote ${this.displayUrl}` };
    if (this.contextLength) info.contextLength = this.contextLength;
    return info;
  }

  async generate(messages: ChatMessage[], tools: ToolSpec[], options: GenerateOptions = {}): Promise<GenerateResult> {
    const started = performance.now();
    const stream = typeof options.onToken === 'function';
    const body = this.requestBody(messages, tools, options, stream);
    let partial = '';
    let wire: WireAssistant;
    try {
      wire = await this.withRetries(options.signal, async (signal) => {
        const res = await this.send('/chat/completions', body, signal, stream);
        if (!stream) return this.readCompletion(res);
        return this.readStream(res, (delta) => {
          partial += delta;
          options.onToken!(delta);
        });
      }, () => partial.length > 0);
    } catch (e) {
      if (options.signal?.aborted) return this.abortedResult(messages, tools, partial, started);
      throw e;
    }
    return this.toResult(wire, messages, tools, started);
  }

  async countTokens(messages: ChatMessage[], tools: ToolSpec[]): Promise<number> {
    const root = this.baseUrl.replace(/\/v1$/, '');
    const wireMessages = messages.map(toWireMessage);
    const wireTools = tools.length ? tools : undefined;
    if (this.tokenizer === undefined || this.tokenizer === 'vllm') {
      // vLLM (and SGLang) render the chat template server-side: exact count including tools.
      const r = await this.probe(`${root}/tokenize`, {
        model: this.opts.model,
        messages: wireMessages,
        tools: wireTools,
        add_generation_prompt: true,
      });
      const parsed = z.object({ count: z.number(), max_model_len: z.number().nullish() }).safeParse(r);
      if (parsed.success) {
        this.tokenizer = 'vllm';
        if (parsed.data.max_model_len) this.contextLength ??= parsed.data.max_model_len;
        return parsed.data.count;
      }
      if (this.tokenizer === 'vllm') return estimateTokens(messages, tools);
    }
    if (this.tokenizer === undefined || this.tokenizer === 'llamacpp') {
      // llama.cpp: render with the model's template, then tokenize the prompt text.
      const applied = z.object({ prompt: z.string() }).safeParse(
        await this.probe(`${root}/apply-template`, { messages: wireMessages, tools: wireTools }),
      );
      if (applied.success) {
        const tokens = z
          .object({ tokens: z.array(z.unknown()) })
          .safeParse(await this.probe(`${root}/tokenize`, { content: applied.data.prompt, add_special: true }));
        if (tokens.success) {
          this.tokenizer = 'llamacpp';
          return tokens.data.tokens.length;
        }
      }
    }
    this.tokenizer = 'none';
    return estimateTokens(messages, tools);
  }

  /** GET /models: is the server up and does it serve our model? Never throws. */
  async ping(signal?: AbortSignal): Promise<PingResult> {
    const url = `${this.baseUrl}/models`;
    try {
      const timeout = AbortSignal.timeout(Math.min(this.timeoutMs, PROBE_TIMEOUT_MS));
      const res = await this.fetchImpl(url, {
        headers: this.headers(false),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      const text = await res.text();
      if (!res.ok) {
        return { ok: false, models: [], message: this.clean(describeHttpError(this.displayUrl, res.status, res.statusText, text)) };
      }
      const list = ModelListSchema.safeParse(safeJson(text));
      if (!list.success) return { ok: false, models: [], message: `${this.displayUrl}/models did not return an OpenAI model list.` };
      const models = list.data.data.map((m) => m.id);
      const ours = list.data.data.find((m) => m.id === this.opts.model);
      if (!ours) {
        return {
          ok: false,
          models,
          message: `${this.displayUrl} is up but does not serve "${this.opts.model}" (it serves: ${models.join(', ') || 'nothing'}); set FROGNANO_OPENAI_MODEL.`,
        };
      }
      if (ours.max_model_len) this.contextLength ??= ours.max_model_len;
      const ctx = ours.max_model_len ? `, context ${ours.max_model_len} tokens` : '';
      return { ok: true, models, message: `${this.displayUrl} serves "${this.opts.model}"${ctx}.` };
    } catch (e) {
      return { ok: false, models: [], message: this.clean(`cannot reach ${this.displayUrl}: ${networkCause(e)}`) };
    }
  }

  private requestBody(messages: ChatMessage[], tools: ToolSpec[], o: GenerateOptions, stream: boolean): Record<string, unknown> {
    const body: Record<string, unknown> = {
      ...this.opts.extraBody,
      model: this.opts.model,
      messages: messages.map(toWireMessage),
      temperature: o.temperature ?? 0,
    };
    if (tools.length) {
      body.tools = tools;
      body.tool_choice = 'auto';
    }
    if (o.maxNewTokens !== undefined) body.max_tokens = o.maxNewTokens;
    if (o.topP !== undefined) body.top_p = o.topP;
    // top_k is not OpenAI's, but vLLM, SGLang and llama.cpp all accept it.
    if (o.topK !== undefined) body.top_k = o.topK;
    if (o.seed !== undefined) body.seed = o.seed;
    if (o.stop?.length) body.stop = o.stop;
    if (stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return body;
  }

  private headers(json: boolean, stream = false): Record<string, string> {
    const h: Record<string, string> = { accept: stream ? 'text/event-stream' : 'application/json' };
    if (json) h['content-type'] = 'application/json';
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    else if (this.basicAuth) h.authorization = `Basic ${this.basicAuth}`;
    return h;
  }

  private async send(path: string, body: unknown, signal: AbortSignal, stream: boolean): Promise<Response> {
    const res = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: this.headers(true, stream),
      body: JSON.stringify(body),
      signal,
    });
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    throw new HttpStatusError(
      res.status,
      describeHttpError(this.displayUrl, res.status, res.statusText, text),
      parseRetryAfter(res.headers.get('retry-after')),
    );
  }

  /**
   * Runs one attempt per try with its own timeout, retrying 429/5xx/network failures. Turns every
   * failure into a ModelError whose text is safe to log (no key, no credentials in URLs).
   */
  private async withRetries<T>(
    callerSignal: AbortSignal | undefined,
    attempt: (signal: AbortSignal) => Promise<T>,
    deliveredOutput: () => boolean,
  ): Promise<T> {
    for (let retry = 0; ; retry++) {
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
      let reason: string;
      let waitMs: number | undefined;
      try {
        return await attempt(signal);
      } catch (e) {
        if (callerSignal?.aborted) throw new ModelError('Generation was cancelled.');
        if (e instanceof ModelError) throw e;
        if (timeout.aborted) {
          throw new ModelError(`${this.displayUrl} did not finish answering within ${seconds(this.timeoutMs)}.`, true);
        }
        if (e instanceof StreamBrokenError) throw new ModelError(this.clean(e.message), true);
        if (e instanceof HttpStatusError) {
          if (!isRetryableStatus(e.status)) throw new ModelError(this.clean(e.message), false);
          if (e.retryAfterMs !== undefined && e.retryAfterMs > this.policy.maxRetryAfterMs) {
            throw new ModelError(this.clean(`${e.message} (the server asks to wait ${Math.round(e.retryAfterMs / 1000)} s)`), true);
          }
          reason = e.message;
          waitMs = e.retryAfterMs;
        } else {
          reason = `cannot reach ${this.displayUrl}: ${networkCause(e)}`;
        }
        if (deliveredOutput()) throw new ModelError(this.clean(`${reason} (after part of the answer was streamed)`), true);
        if (retry >= this.policy.maxRetries) {
          throw new ModelError(this.clean(`${reason} (gave up after ${retry + 1} attempts)`), true);
        }
      }
      const delayMs = waitMs ?? backoffDelayMs(retry, this.policy, this.random);
      this.opts.onRetry?.({ retry: retry + 1, delayMs, reason: this.clean(reason) });
      try {
        await this.sleepImpl(delayMs, callerSignal);
      } catch {
        throw new ModelError('Generation was cancelled.');
      }
    }
  }

  private async readCompletion(res: Response): Promise<WireAssistant> {
    const text = await res.text();
    const json = safeJson(text);
    const parsed = CompletionSchema.safeParse(json);
    if (!parsed.success) {
      throw new ModelError(
        this.clean(`${this.displayUrl} returned a response that is not a chat completion: ${excerpt(text)}`),
        false,
      );
    }
    const { message, finish_reason } = parsed.data.choices[0]!;
    return {
      content: message.content ?? '',
      reasoning: message.reasoning_content ?? message.reasoning ?? '',
      toolCalls: (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
      finishReason: finish_reason,
      usage: parsed.data.usage,
    };
  }

  private async readStream(res: Response, onDelta: (text: string) => void): Promise<WireAssistant> {
    if (!res.body) throw new ModelError(`${this.displayUrl} sent an empty stream.`, true);
    const out: WireAssistant = { content: '', reasoning: '', toolCalls: [] };
    const calls: { id?: string; name: string; arguments: string }[] = [];
    let sawDone = false;
    try {
      for await (const data of readSseData(res.body)) {
        if (data.trim() === '[DONE]') {
          sawDone = true;
          break;
        }
        const chunk = ChunkSchema.safeParse(safeJson(data));
        if (!chunk.success) throw new ModelError(this.clean(`${this.displayUrl} sent an unreadable stream event: ${excerpt(data)}`));
        if (chunk.data.error !== undefined) {
          throw new ModelError(this.clean(`${this.displayUrl} reported an error mid-stream: ${errorDetail(JSON.stringify(chunk.data.error))}`), true);
        }
        if (chunk.data.usage) out.usage = chunk.data.usage;
        const choice = chunk.data.choices?.[0];
        if (!choice) continue;
        const d = choice.delta;
        const reasoning = d?.reasoning_content ?? d?.reasoning;
        if (reasoning) {
          out.reasoning += reasoning;
          onDelta(reasoning);
        }
        if (d?.content) {
          out.content += d.content;
          onDelta(d.content);
        }
        for (const [i, tc] of (d?.tool_calls ?? []).entries()) {
          const slot = (calls[tc.index ?? i] ??= { name: '', arguments: '' });
          if (tc.id) slot.id = tc.id;
          if (tc.function?.name) slot.name = slot.name || tc.function.name;
          if (tc.function?.arguments) slot.arguments += tc.function.arguments;
        }
        if (choice.finish_reason) out.finishReason = choice.finish_reason;
      }
    } catch (e) {
      if (e instanceof ModelError) throw e;
      // A dropped connection mid-stream (not our timeout or the caller: withRetries checks those).
      throw new StreamBrokenError(`the stream from ${this.displayUrl} broke: ${networkCause(e)}`);
    }
    if (!sawDone && !out.finishReason) throw new StreamBrokenError(`the stream from ${this.displayUrl} ended early.`);
    out.toolCalls = calls.filter(Boolean);
    return out;
  }

  private toResult(wire: WireAssistant, messages: ChatMessage[], tools: ToolSpec[], started: number): GenerateResult {
    const idPrefix = randomBytes(4).toString('hex');
    let content = wire.content;
    let reasoning = wire.reasoning.trim() || undefined;
    let toolCalls: ToolCall[] = [];
    const parseErrors: string[] = [];
    if (wire.toolCalls.length) {
      wire.toolCalls.forEach((c, i) => {
        const args = decodeArguments(c.arguments);
        if (!c.name) parseErrors.push(`Malformed tool call #${i + 1}: no function name.`);
        else if (typeof args === 'string') parseErrors.push(`Malformed tool call #${i + 1} (${c.name}): ${args}`);
        else toolCalls.push({ id: c.id || `call_${idPrefix}_${i}`, name: c.name, arguments: args });
      });
      // A server with a tool parser but no reasoning parser leaves <think> in the content.
      const split = splitReasoning(content, false);
      content = split.rest.trim();
      reasoning ??= split.reasoning;
    } else {
      // No server-side tool parser (or it gave up on malformed markup): parse the raw text ourselves.
      const parsed = parseAssistantOutput(content, { idPrefix, tools });
      content = parsed.content;
      reasoning = [reasoning, parsed.reasoning].filter(Boolean).join('\n\n') || undefined;
      toolCalls = parsed.toolCalls;
      parseErrors.push(...parsed.errors);
    }
    const message: ChatMessage = { role: 'assistant', content };
    if (reasoning) message.reasoning = reasoning;
    if (toolCalls.length) message.tool_calls = toolCalls;
    const rawText = wire.reasoning ? `<think>\n${wire.reasoning}\n</think>\n\n${wire.content}` : wire.content;
    const tokens = usageTokens(wire.usage, messages, tools, rawText);
    return {
      message,
      finishReason: finishReason(wire.finishReason, toolCalls.length > 0),
      ...tokens,
      parseErrors,
      rawText,
      elapsedMs: performance.now() - started,
    };
  }

  private abortedResult(messages: ChatMessage[], tools: ToolSpec[], partial: string, started: number): GenerateResult {
    return {
      message: { role: 'assistant', content: partial },
      finishReason: 'aborted',
      ...usageTokens(undefined, messages, tools, partial),
      parseErrors: [],
      rawText: partial,
      elapsedMs: performance.now() - started,
    };
  }

  /** One short POST for the tokenizer probes: the parsed JSON body, or null on any failure. */
  private async probe(url: string, body: unknown): Promise<unknown> {
    try {
      const res = await this.fetchImpl(url, {
        method: 'POST',
        headers: this.headers(true),
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(Math.min(this.timeoutMs, PROBE_TIMEOUT_MS)),
      });
      return res.ok ? safeJson(await res.text()) : null;
    } catch {
      return null;
    }
  }

  /** Removes the api key (even if a server echoes it) and anything secret-shaped. */
  private clean(text: string): string {
    let out = text;
    for (const secret of [this.opts.apiKey, this.basicAuth]) if (secret) out = out.split(secret).join('[REDACTED]');
    return redact(out);
  }
}

export function toWireMessage(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case 'assistant': {
      const out: Record<string, unknown> = { role: 'assistant', content: m.content };
      // Qwen chat templates read reasoning_content to decide which past reasoning to keep.
      if (m.reasoning) out.reasoning_content = m.reasoning;
      if (m.tool_calls?.length) {
        out.tool_calls = m.tool_calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }));
      }
      return out;
    }
    case 'tool': {
      const out: Record<string, unknown> = { role: 'tool', content: m.content, tool_call_id: m.tool_call_id ?? '' };
      if (m.name) out.name = m.name;
      return out;
    }
    default:
      return { role: m.role, content: m.content };
  }
}

/** Arguments object, or a message saying why the server's arguments are unusable. */
function decodeArguments(raw: string | Record<string, unknown> | null | undefined): Record<string, unknown> | string {
  if (raw === null || raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return {};
  if (typeof raw !== 'string') return raw;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    return `arguments are not valid JSON (${(e as Error).message}): ${excerpt(raw, 120)}`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'arguments must be a JSON object.';
  return value as Record<string, unknown>;
}

function finishReason(raw: string | null | undefined, hasCalls: boolean): FinishReason {
  if (raw === 'length') return 'length';
  return hasCalls ? 'tool_calls' : 'stop';
}

function usageTokens(
  usage: Usage | null | undefined,
  messages: ChatMessage[],
  tools: ToolSpec[],
  rawText: string,
): Pick<GenerateResult, 'promptTokens' | 'prefillTokens' | 'completionTokens'> {
  if (!usage) {
    const promptTokens = estimateTokens(messages, tools);
    return { promptTokens, prefillTokens: promptTokens, completionTokens: Math.ceil(rawText.length / CHARS_PER_TOKEN) };
  }
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    promptTokens: usage.prompt_tokens,
    prefillTokens: Math.max(0, usage.prompt_tokens - cached),
    completionTokens: usage.completion_tokens,
  };
}

/** Code averages 3-4 characters a token; 3 overestimates, so a context limit trips early, not late. */
const CHARS_PER_TOKEN = 3;
/** Per-message template overhead (`<|im_start|>role\n ... <|im_end|>\n`). */
const TOKENS_PER_MESSAGE = 5;

/** Rough prompt size when the server cannot count for us. */
export function estimateTokens(messages: ChatMessage[], tools: ToolSpec[]): number {
  let chars = tools.length ? JSON.stringify(tools).length : 0;
  for (const m of messages) {
    chars += m.content.length + (m.reasoning?.length ?? 0);
    for (const c of m.tool_calls ?? []) chars += c.name.length + JSON.stringify(c.arguments).length + 40;
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * messages.length;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function excerpt(text: string, max = ERROR_DETAIL_CHARS): string {
  const one = text.trim().replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max)}...` : one || '(empty body)';
}

/** The useful part of an error body: OpenAI `{error:{message}}`, FastAPI `{detail}`, or the text. */
function errorDetail(text: string): string {
  const json = safeJson(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown } | undefined;
  const candidate =
    (typeof json?.error === 'object' ? json.error?.message : json?.error) ?? json?.message ?? json?.detail ?? text;
  return excerpt(typeof candidate === 'string' ? candidate : JSON.stringify(candidate));
}

function describeHttpError(url: string, status: number, statusText: string, body: string): string {
  const hint =
    status === 401 || status === 403
      ? ' Check FROGNANO_OPENAI_API_KEY.'
      : status === 404
        ? ' Check that the base URL ends in /v1 and FROGNANO_OPENAI_MODEL names a served model.'
        : '';
  return `${url} answered ${status}${statusText ? ` ${statusText}` : ''}: ${errorDetail(body)}.${hint}`;
}

/** fetch() hides the socket error in `cause`; that is the part a person can act on. */
function networkCause(e: unknown): string {
  const err = e as { message?: string; cause?: { code?: string; message?: string } };
  const cause = err?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? err?.message ?? String(e);
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

function splitCredentials(url: string): { url: string; basicAuth?: string } {
  try {
    const u = new URL(url);
    if (!u.username && !u.password) return { url };
    const basicAuth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
    u.username = '';
    u.password = '';
    return { url: u.toString().replace(/\/+$/, ''), basicAuth };
  } catch {
    return { url };
  }
}

/** The base URL without user:password or query, for messages. */
function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    return u.toString().replace(/\/+$/, '');
  } catch {
    return '(invalid base URL)';
  }
}
