/**
 * ModelBackend over an OpenAI-compatible `/v1/chat/completions` endpoint: vLLM, SGLang or the
 * llama.cpp server running FrogNano beside the runner (the scalable GPU path).
 *
 * The server may or may not parse tool calls itself (vLLM needs `--enable-auto-tool-choice
 * --tool-call-parser qwen3_coder`). When it returns `tool_calls` we use them; when it returns the raw
 * `<tool_call>` markup as content we parse it with the same parser the onnx backend uses, so the
 * Leaf loop sees the same thing either way. Answers are streamed by default so that a stalled server is
 * noticed within `stallTimeoutMs`, not after the whole request timeout.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { redact } from '../util/redact.js';
import { LEAF_EVAL_SAMPLING } from './leafSampling.js';
import {
  ChunkSchema,
  CompletionSchema,
  ModelListSchema,
  StreamAssembler,
  renderToolCallsXml,
  toWireMessage,
  wireFromCompletion,
  type Usage,
  type WireAssistant,
} from './openaiWire.js';
import {
  DEFAULT_RETRY_POLICY,
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfter,
  sleep as defaultSleep,
  type RetryInfo,
  type RetryPolicy,
} from './retry.js';
import {
  contextOverflowFacts,
  describeHttpError,
  errorBody,
  errorDetail,
  excerpt,
  isAutoToolChoiceRejection,
  isDeterministicServerError,
  safeJson,
  sentence,
} from './serverErrors.js';
import { CHARS_PER_TOKEN, PromptTokenCounter, estimateTokens, type PromptCount, type ProbeResponse } from './openaiTokens.js';
import { IdleWatch, readSseData } from './sse.js';
import { parseAssistantOutput, splitReasoning } from './toolCallParser.js';
import {
  ContextOverflowError,
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

export { toWireMessage } from './openaiWire.js';
export { estimateTokens } from './openaiTokens.js';

export interface OpenAIBackendOptions {
  /** Up to and including `/v1`, e.g. `http://gpu-box:8000/v1`. */
  baseUrl: string;
  /** The served model name (`--served-model-name` in vLLM, `--alias` in llama.cpp). */
  model: string;
  apiKey?: string;
  /** Limit for one HTTP attempt, body included. Default 600 s. */
  timeoutMs?: number;
  /** A streamed answer with no bytes for this long is a stalled server: the attempt ends. Default 180 s. */
  stallTimeoutMs?: number;
  /** Stream answers (default true; needed for stall detection). */
  stream?: boolean;
  /** Retries on 429, 5xx, network errors and stalls. Default 12 (see DEFAULT_RETRY_POLICY). */
  maxRetries?: number;
  retry?: Partial<Omit<RetryPolicy, 'maxRetries'>>;
  /** Context window set by the operator; the server's own (`max_model_len`, `n_ctx`) caps it when smaller. */
  contextLength?: number;
  /** Extra request fields, e.g. `{ chat_template_kwargs: { enable_thinking: false } }`; they override the defaults. */
  extraBody?: Record<string, unknown>;
  /** Injection points for tests; production uses the defaults. */
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  /** Told about each retry before its wait, so the CLI and the runner can show it. */
  onRetry?: (info: RetryInfo) => void;
  /** Told about a degraded but working setup (e.g. a server without its tool parser), once. */
  onWarning?: (message: string) => void;
}

export interface PingResult {
  ok: boolean;
  /** One line for `frognano doctor`. */
  message: string;
  models: string[];
}

export interface ToolCallProbeResult {
  ok: boolean;
  /** One line for `frognano doctor`: what works, or exactly which server flags are missing. */
  message: string;
}

const DEFAULT_TIMEOUT_MS = 600_000;
const DEFAULT_STALL_TIMEOUT_MS = 180_000;
const PROBE_TIMEOUT_MS = 15_000;
/** How often an unknown context length is looked up again (the server may have been down). */
const DISCOVERY_INTERVAL_MS = 60_000;
/** vLLM's flags for FrogNano's tool-call and reasoning formats. */
export const VLLM_TOOL_FLAGS = '--enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3';

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The stream broke after text was already handed to onToken: a retry would repeat it. */
class StreamBrokenError extends Error {}

/** No bytes within the stall timeout. */
class StalledError extends Error {}

export class OpenAIBackend implements ModelBackend {
  private readonly baseUrl: string;
  private readonly displayUrl: string;
  private readonly timeoutMs: number;
  private readonly stallTimeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly sleepImpl: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  /** From `http://user:pass@host/v1`: fetch refuses credentials in URLs, so they travel as a header. */
  private readonly basicAuth?: string;
  /** What the server enforces (learnt from it); the operator's setting is opts.contextLength. */
  private serverContextLength?: number;
  private lastDiscovery = -Infinity;
  private readonly tokens: PromptTokenCounter;
  /** false once vLLM refused tool_choice "auto": tools are sent with "none" and the raw markup parsed here. */
  private autoToolChoice = true;

  constructor(private readonly opts: OpenAIBackendOptions) {
    const { url, basicAuth } = splitCredentials(opts.baseUrl.replace(/\/+$/, ''));
    this.baseUrl = url;
    this.basicAuth = basicAuth;
    this.displayUrl = displayUrl(this.baseUrl);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.stallTimeoutMs = opts.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...opts.retry, maxRetries: opts.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries };
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.sleepImpl = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
    this.tokens = new PromptTokenCounter(this.rootUrl, opts.model, (method, url, body) => this.request(method, url, body), (n) =>
      this.learnContextLength(n),
    );
  }

  /** The usable context: the smaller of the operator's setting and the server's, whichever are known. */
  get contextLength(): number | undefined {
    const known = [this.opts.contextLength, this.serverContextLength].filter((n): n is number => typeof n === 'number' && n > 0);
    return known.length ? Math.min(...known) : undefined;
  }

  info(): BackendInfo {
    const info: BackendInfo = { backend: 'openai', model: this.opts.model, device: `remote ${this.displayUrl}` };
    if (this.contextLength) info.contextLength = this.contextLength;
    return info;
  }

  /**
   * Learns the server's context length (vLLM `max_model_len`, llama.cpp `n_ctx`) if not yet known. Best effort:
   * never throws; an unreachable server is asked again after a minute.
   */
  async discover(signal?: AbortSignal): Promise<void> {
    if (this.serverContextLength || performance.now() - this.lastDiscovery < DISCOVERY_INTERVAL_MS) return;
    this.lastDiscovery = performance.now();
    await this.ping(signal);
    if (this.serverContextLength) return;
    // llama.cpp before `meta.n_ctx` in /v1/models: /props has it.
    const props = z
      .object({ default_generation_settings: z.object({ n_ctx: z.number() }) })
      .safeParse((await this.request('GET', `${this.rootUrl}/props`)).json);
    if (props.success) this.learnContextLength(props.data.default_generation_settings.n_ctx);
  }

  async generate(messages: ChatMessage[], tools: ToolSpec[], options: GenerateOptions = {}): Promise<GenerateResult> {
    const started = performance.now();
    let partial = '';
    try {
      await this.discover(options.signal);
      // Count the prompt as it will be rendered: the template's kwargs (enable_thinking) change its last tokens.
      this.tokens.templateKwargs = this.requestBody([], [], options, undefined, false).chat_template_kwargs as Record<string, unknown>;
      // Two rounds at most: a server that names a smaller context than we knew gets the clamped request once.
      for (let round = 0; ; round++) {
        const prompt = this.contextLength ? await this.tokens.count(messages, tools) : undefined;
        const maxTokens = this.maxTokensFor(prompt, options.maxNewTokens);
        const stream = this.opts.stream !== false || typeof options.onToken === 'function';
        try {
          const wire = await this.withRetries(
            options.signal,
            (signal) =>
              this.attempt(this.requestBody(messages, tools, options, maxTokens, stream), signal, stream, (delta) => {
                if (!options.onToken) return;
                partial += delta;
                options.onToken(delta);
              }),
            () => partial.length > 0,
            options.onRetry,
          );
          return this.toResult(wire, messages, tools, started, maxTokens);
        } catch (e) {
          if (!(e instanceof ContextOverflowError) || round > 0 || maxTokens === undefined || !e.contextLength) throw e;
          // The server's own count of the prompt, when it said one, wins over ours.
          const counted = await this.tokens.count(messages, tools);
          const prompt = { tokens: Math.max(counted.tokens, e.promptTokens ?? 0), exact: counted.exact || e.promptTokens !== undefined };
          const retryWith = this.maxTokensFor(prompt, options.maxNewTokens);
          if (retryWith === undefined || retryWith >= maxTokens) throw e;
        }
      }
    } catch (e) {
      if (options.signal?.aborted) return this.abortedResult(messages, tools, partial, started);
      throw e;
    }
  }

  async countTokens(messages: ChatMessage[], tools: ToolSpec[]): Promise<number> {
    return (await this.tokens.count(messages, tools)).tokens;
  }

  /** GET /models: is the server up and does it serve our model? Never throws. */
  async ping(signal?: AbortSignal): Promise<PingResult> {
    const url = `${this.baseUrl}/models`;
    const r = await this.request('GET', url, undefined, signal);
    if (r.error !== undefined) return { ok: false, models: [], message: this.clean(`cannot reach ${this.displayUrl}: ${r.error}`) };
    if (r.status < 200 || r.status >= 300) {
      return { ok: false, models: [], message: this.clean(describeHttpError(this.displayUrl, r.status, r.statusText, r.text)) };
    }
    const list = ModelListSchema.safeParse(r.json);
    if (!list.success) return { ok: false, models: [], message: `${this.displayUrl}/models did not return an OpenAI model list.` };
    const models = list.data.data.map((m) => m.id);
    const ours = list.data.data.find((m) => m.id === this.opts.model || m.aliases?.includes(this.opts.model));
    if (!ours) {
      const llamacpp = list.data.data.some((m) => m.owned_by === 'llamacpp');
      const fix = llamacpp ? `start llama-server with --alias ${this.opts.model}, or set FROGNANO_OPENAI_MODEL` : 'set FROGNANO_OPENAI_MODEL';
      return {
        ok: false,
        models,
        message: `${this.displayUrl} is up but does not serve "${this.opts.model}" (it serves: ${models.join(', ') || 'nothing'}); ${fix}.`,
      };
    }
    this.learnContextLength(ours.max_model_len ?? ours.meta?.n_ctx ?? undefined);
    const ctx = this.serverContextLength ? `, context ${this.serverContextLength} tokens` : '';
    return { ok: true, models, message: `${this.displayUrl} serves "${this.opts.model}"${ctx}.` };
  }

  /**
   * Does the server answer with parsed tool calls? Two small requests: tool_choice "auto" (vLLM refuses it
   * without its tool flags) and tool_choice "required" (a grammar-constrained call any model can make, which
   * must come back in `tool_calls`). Never throws.
   */
  async probeToolCalls(signal?: AbortSignal): Promise<ToolCallProbeResult> {
    const tools: ToolSpec[] = [
      {
        type: 'function',
        function: {
          name: 'report_status',
          description: 'Report that the service is ready.',
          parameters: { type: 'object', properties: { ready: { type: 'boolean' } }, required: ['ready'] },
        },
      },
    ];
    const messages = [{ role: 'user', content: 'Call report_status with ready=true.' }];
    const base = { model: this.opts.model, messages, tools, temperature: 0, chat_template_kwargs: { enable_thinking: false } };
    const auto = await this.request('POST', `${this.baseUrl}/chat/completions`, { ...base, tool_choice: 'auto', max_tokens: 1 }, signal);
    if (auto.error !== undefined) return { ok: false, message: this.clean(`cannot reach ${this.displayUrl}: ${auto.error}`) };
    if (auto.status >= 400) {
      const body = errorBody(auto.text);
      const message = isAutoToolChoiceRejection(body)
        ? `${this.displayUrl} refuses tool_choice "auto": start vLLM with ${VLLM_TOOL_FLAGS} (the runner falls back to parsing raw markup, slower and less reliable).`
        : this.clean(`tool request refused: ${describeHttpError(this.displayUrl, auto.status, auto.statusText, auto.text)}`);
      return { ok: false, message };
    }
    const required = await this.request('POST', `${this.baseUrl}/chat/completions`, { ...base, tool_choice: 'required', max_tokens: 256 }, signal);
    const parsed = CompletionSchema.safeParse(required.json);
    if (required.error !== undefined || required.status >= 400 || !parsed.success) {
      const why = required.error ?? (required.status >= 400 ? `${required.status}: ${errorDetail(required.text)}` : excerpt(required.text, 120));
      return { ok: false, message: this.clean(`${this.displayUrl} did not answer a tool_choice "required" request with a chat completion (${why}).`) };
    }
    const call = parsed.data.choices[0]!.message.tool_calls?.[0];
    if (!call) {
      return {
        ok: false,
        message: `${this.displayUrl} answered without tool_calls: start vLLM with ${VLLM_TOOL_FLAGS}, or llama-server with --jinja.`,
      };
    }
    return { ok: true, message: `answers with parsed tool calls (${call.function.name}, finish_reason ${parsed.data.choices[0]!.finish_reason}).` };
  }

  private get rootUrl(): string {
    return this.baseUrl.replace(/\/v1$/, '');
  }

  private learnContextLength(n: number | null | undefined): void {
    if (typeof n === 'number' && n > 0) this.serverContextLength = n;
  }

  /**
   * The request's max_tokens: the per-turn cap, clamped to what the context leaves. Omitted when there is no cap
   * and the prompt size is only estimated (the server then fills the rest of the context itself).
   */
  private maxTokensFor(prompt: PromptCount | undefined, cap: number | undefined): number | undefined {
    const ctx = this.contextLength;
    if (!ctx || !prompt) return cap;
    const room = ctx - prompt.tokens;
    if (room <= 0) {
      throw new ContextOverflowError(
        `the prompt (${prompt.tokens}${prompt.exact ? '' : ' estimated'} tokens) fills the model's ${ctx}-token context`,
        prompt.tokens,
        ctx,
      );
    }
    if (cap === undefined) return prompt.exact ? room : undefined;
    return Math.min(cap, room);
  }

  private requestBody(
    messages: ChatMessage[],
    tools: ToolSpec[],
    o: GenerateOptions,
    maxTokens: number | undefined,
    stream: boolean,
  ): Record<string, unknown> {
    const body: Record<string, unknown> = { model: this.opts.model, messages: messages.map(toWireMessage) };
    if (tools.length) {
      body.tools = tools;
      body.tool_choice = this.autoToolChoice ? 'auto' : 'none';
    }
    // Upstream Leaf's eval request: temperature and parallel_tool_calls, the rest as extra_body fields.
    body.temperature = o.temperature ?? LEAF_EVAL_SAMPLING.temperature;
    if (tools.length) body.parallel_tool_calls = o.parallelToolCalls ?? LEAF_EVAL_SAMPLING.parallelToolCalls;
    if (maxTokens !== undefined) body.max_tokens = maxTokens;
    body.top_p = o.topP ?? LEAF_EVAL_SAMPLING.topP;
    // top_k, min_p and repetition_penalty are not OpenAI's; vLLM and SGLang read them, llama.cpp reads the first two.
    body.top_k = o.topK ?? LEAF_EVAL_SAMPLING.topK;
    body.min_p = o.minP ?? LEAF_EVAL_SAMPLING.minP;
    body.repetition_penalty = o.repetitionPenalty ?? LEAF_EVAL_SAMPLING.repetitionPenalty;
    body.chat_template_kwargs = { enable_thinking: o.enableThinking ?? LEAF_EVAL_SAMPLING.enableThinking };
    if (o.seed !== undefined) body.seed = o.seed;
    if (o.stop?.length) body.stop = o.stop;
    if (stream) {
      body.stream = true;
      body.stream_options = { include_usage: true };
    }
    return { ...body, ...this.opts.extraBody };
  }

  private headers(json: boolean, stream = false): Record<string, string> {
    const h: Record<string, string> = { accept: stream ? 'text/event-stream' : 'application/json' };
    if (json) h['content-type'] = 'application/json';
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    else if (this.basicAuth) h.authorization = `Basic ${this.basicAuth}`;
    return h;
  }

  /** One chat-completion attempt; a streamed one ends early when the server goes silent. */
  private async attempt(body: Record<string, unknown>, signal: AbortSignal, stream: boolean, onDelta: (t: string) => void): Promise<WireAssistant> {
    const watch = stream ? new IdleWatch(this.stallTimeoutMs) : undefined;
    watch?.touch();
    try {
      const res = await this.fetchImpl(`${this.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: this.headers(true, stream),
        body: JSON.stringify(body),
        signal: watch ? AbortSignal.any([signal, watch.signal]) : signal,
      });
      if (!res.ok) {
        const text = await res.text().catch(() => '');
        throw new HttpStatusError(res.status, describeHttpError(this.displayUrl, res.status, res.statusText, text), text, parseRetryAfter(res.headers.get('retry-after')));
      }
      watch?.touch();
      if (!stream || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return await this.readCompletion(res);
      return await this.readStream(res, watch!, onDelta);
    } catch (e) {
      if (watch?.fired) throw new StalledError(`${this.displayUrl} sent nothing for ${seconds(this.stallTimeoutMs)} (stalled stream).`);
      throw e;
    } finally {
      watch?.stop();
    }
  }

  /**
   * Runs attempts until one succeeds, retrying 429/5xx/network failures/stalls with backoff inside the
   * policy's bounds and telling onRetry before each wait. Turns every failure into a ModelError whose text is
   * safe to log (no key, no credentials in URLs); a full context becomes ContextOverflowError.
   */
  private async withRetries<T>(
    callerSignal: AbortSignal | undefined,
    attempt: (signal: AbortSignal) => Promise<T>,
    deliveredOutput: () => boolean,
    onRetry?: (info: RetryInfo) => void,
  ): Promise<T> {
    const started = performance.now();
    let previous500: string | undefined;
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
          const body = errorBody(e.body);
          const overflow = contextOverflowFacts(body);
          if (overflow) {
            this.learnContextLength(overflow.contextLength);
            throw new ContextOverflowError(this.clean(e.message), overflow.promptTokens, overflow.contextLength);
          }
          if (e.status === 400 && this.autoToolChoice && isAutoToolChoiceRejection(body)) {
            // Fall back to raw markup at once, without counting a retry: with tool_choice "none" vLLM still renders
            // the tools into the prompt and returns the model's <tool_call> markup as content, which we parse.
            this.autoToolChoice = false;
            this.opts.onWarning?.(`${this.displayUrl} refuses tool_choice "auto": parsing the model's raw tool-call markup instead (start vLLM with ${VLLM_TOOL_FLAGS}).`);
            retry--;
            continue;
          }
          if (!isRetryableStatus(e.status)) throw new ModelError(this.clean(e.message), false);
          if (e.status === 500 && (isDeterministicServerError(body) || previous500 === e.message)) {
            const why = previous500 === e.message ? ' (the same error twice: not retried further)' : ' (a rejection of the request: not retried)';
            throw new ModelError(this.clean(`${e.message}${why}`), false);
          }
          previous500 = e.status === 500 ? e.message : undefined;
          if (e.retryAfterMs !== undefined && e.retryAfterMs > this.policy.maxRetryAfterMs) {
            throw new ModelError(this.clean(`${e.message} (the server asks to wait ${Math.round(e.retryAfterMs / 1000)} s)`), true);
          }
          reason = e.message;
          waitMs = e.retryAfterMs;
        } else if (e instanceof StalledError) {
          reason = e.message;
        } else {
          reason = sentence(`cannot reach ${this.displayUrl}: ${networkCause(e)}`);
        }
        if (deliveredOutput()) throw new ModelError(this.clean(`${reason} (after part of the answer was streamed)`), true);
        const elapsedMs = performance.now() - started;
        if (retry >= this.policy.maxRetries || elapsedMs >= this.policy.maxRetryWindowMs) {
          throw new ModelError(this.clean(`${reason} (gave up after ${retry + 1} attempts in ${seconds(elapsedMs)})`), true);
        }
        const delayMs = waitMs ?? backoffDelayMs(retry, this.policy, this.random);
        const info: RetryInfo = { retry: retry + 1, maxRetries: this.policy.maxRetries, delayMs, reason: this.clean(reason), elapsedMs };
        this.opts.onRetry?.(info);
        onRetry?.(info);
        try {
          await this.sleepImpl(delayMs, callerSignal);
        } catch {
          throw new ModelError('Generation was cancelled.');
        }
      }
    }
  }

  private async readCompletion(res: Response): Promise<WireAssistant> {
    const text = await res.text();
    const parsed = CompletionSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      throw new ModelError(this.clean(`${this.displayUrl} returned a response that is not a chat completion: ${excerpt(text)}`), false);
    }
    return wireFromCompletion(parsed.data);
  }

  private async readStream(res: Response, watch: IdleWatch, onDelta: (text: string) => void): Promise<WireAssistant> {
    if (!res.body) throw new ModelError(`${this.displayUrl} sent an empty stream.`, true);
    const assembler = new StreamAssembler();
    let sawDone = false;
    try {
      for await (const data of readSseData(watch.pipe(res.body))) {
        if (data.trim() === '[DONE]') {
          sawDone = true;
          break;
        }
        const chunk = ChunkSchema.safeParse(safeJson(data));
        if (!chunk.success) throw new ModelError(this.clean(`${this.displayUrl} sent an unreadable stream event: ${excerpt(data)}`));
        if (chunk.data.error !== undefined) {
          const raw = JSON.stringify({ error: chunk.data.error });
          const overflow = contextOverflowFacts(errorBody(raw));
          const message = this.clean(`${this.displayUrl} reported an error mid-stream: ${errorDetail(raw)}`);
          if (overflow) throw new ContextOverflowError(message, overflow.promptTokens, overflow.contextLength);
          throw new ModelError(message, true);
        }
        for (const delta of assembler.add(chunk.data)) onDelta(delta);
      }
    } catch (e) {
      if (e instanceof ModelError || watch.fired) throw e;
      // A dropped connection mid-stream (not our timeout or the caller: withRetries checks those).
      throw new StreamBrokenError(`the stream from ${this.displayUrl} broke: ${networkCause(e)}`);
    }
    if (!sawDone && !assembler.finished) throw new StreamBrokenError(`the stream from ${this.displayUrl} ended early.`);
    return assembler.result();
  }

  private toResult(wire: WireAssistant, messages: ChatMessage[], tools: ToolSpec[], started: number, maxTokens: number | undefined): GenerateResult {
    const idPrefix = randomBytes(4).toString('hex');
    let content = wire.content;
    let reasoning = wire.reasoning.trim() || undefined;
    let toolCalls: ToolCall[] = [];
    const parseErrors: string[] = [];
    if (wire.toolCalls.length) {
      // As upstream Leaf does with a server's calls: arguments that are not a JSON object run as {} (the tool then
      // answers with its own error, e.g. "ValueError: command is required"), and the text the server sent is kept.
      toolCalls = wire.toolCalls.map((c, i) => ({
        id: c.id || `call_${idPrefix}_${i}`,
        name: c.name ?? '',
        ...decodeArguments(c.arguments),
      }));
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
    const calls = wire.toolCalls.length ? renderToolCallsXml(wire.toolCalls) : '';
    const text = [wire.content, calls].filter(Boolean).join(wire.content && calls && !wire.content.endsWith('\n') ? '\n' : '');
    const rawText = wire.reasoning ? `<think>\n${wire.reasoning}\n</think>\n\n${text}` : text;
    const tokens = usageTokens(wire.usage, messages, tools, rawText);
    const truncated = this.wasCutOff(wire, maxTokens);
    const message: ChatMessage = { role: 'assistant', content };
    if (reasoning) message.reasoning = reasoning;
    // A call cut off at max_tokens is never run: vLLM's parser reports it as complete, with the half-written argument.
    if (toolCalls.length && !truncated) message.tool_calls = toolCalls;
    return {
      message,
      finishReason: truncated ? 'length' : message.tool_calls ? 'tool_calls' : 'stop',
      ...tokens,
      parseErrors: truncated ? [] : parseErrors,
      rawText,
      elapsedMs: performance.now() - started,
    };
  }

  /** The answer stopped at max_tokens or the context end, whatever finish_reason the server chose to report. */
  private wasCutOff(wire: WireAssistant, maxTokens: number | undefined): boolean {
    if (wire.finishReason && ['length', 'max_tokens', 'max_new_tokens'].includes(wire.finishReason.toLowerCase())) return true;
    const usage = wire.usage;
    if (!usage) return false;
    if (maxTokens !== undefined && usage.completion_tokens >= maxTokens) return true;
    const ctx = this.contextLength;
    return ctx !== undefined && usage.prompt_tokens + usage.completion_tokens >= ctx;
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

  /** One short request for probes: status, text and JSON, or the network error; never throws. */
  private async request(
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<ProbeResponse> {
    try {
      const timeout = AbortSignal.timeout(Math.min(this.timeoutMs, PROBE_TIMEOUT_MS));
      const res = await this.fetchImpl(url, {
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
  private clean(text: string): string {
    let out = text;
    for (const secret of [this.opts.apiKey, this.basicAuth]) if (secret) out = out.split(secret).join('[REDACTED]');
    return redact(out);
  }
}

/** A server's arguments as upstream Leaf reads them (text that is not a JSON object is {}), with the text kept. */
function decodeArguments(raw: string | Record<string, unknown> | null | undefined): Pick<ToolCall, 'arguments' | 'argumentsText'> {
  if (raw === null || raw === undefined) return { arguments: {} };
  if (typeof raw !== 'string') return { arguments: raw };
  let value: unknown;
  try {
    value = JSON.parse(raw || '{}');
  } catch {
    return { arguments: {}, argumentsText: raw };
  }
  const args = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  return { arguments: args, argumentsText: raw };
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
