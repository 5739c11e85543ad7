/**
 * ModelBackend over an OpenAI-compatible `/v1/chat/completions` endpoint: vLLM, SGLang or the
 * llama.cpp server running FrogNano beside the runner (the scalable GPU path).
 *
 * The server may or may not parse tool calls itself (vLLM needs `--enable-auto-tool-choice
 * --tool-call-parser qwen3_coder`). When it returns `tool_calls` we use them; when it returns the raw
 * `<tool_call>` markup as content we parse it with the same parser the onnx backend uses, so the
 * Leaf loop sees the same thing either way. Answers are streamed by default so that a stalled server is
 * noticed within `stallTimeoutMs`, not after the whole request timeout.
 *
 * What the backend learns from the server (its context length, whether it takes tool_choice "auto") is kept
 * here; everything about one call (its request, its streamed text) lives in that call.
 */
import { DEFAULT_RETRY_POLICY, sleep as defaultSleep, type RetryInfo, type RetryPolicy } from '../retry.js';
import {
  ContextOverflowError,
  type BackendInfo,
  type ChatMessage,
  type GenerateOptions,
  type GenerateResult,
  type ModelBackend,
  type ToolSpec,
} from '../types.js';
import { abortedResult, toResult } from './answer.js';
import { VLLM_TOOL_FLAGS, probeToolCalls, propsContextLength, type ToolCallProbeResult } from './probes.js';
import { chatRequestBody, chooseMaxTokens, templateKwargsFor, type ContextWindow } from './request.js';
import { withRetries, type RetryContext } from './retries.js';
import { describeHttpError } from './serverErrors.js';
import { PromptTokenCounter, type PromptCount } from './tokens.js';
import { ServerTransport } from './transport.js';
import { serverUrls } from './urls.js';
import { ModelListSchema } from './wire.js';

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
  /** Told, for a debug log, why a request carries a max_tokens nobody configured as such. */
  onDebug?: (message: string) => void;
}

export interface PingResult {
  ok: boolean;
  /** One line for `frognano doctor`. */
  message: string;
  models: string[];
}

export { VLLM_TOOL_FLAGS, type ToolCallProbeResult } from './probes.js';

const DEFAULT_TIMEOUT_MS = 600_000;
const DEFAULT_STALL_TIMEOUT_MS = 180_000;
/** How often an unknown context length is looked up again (the server may have been down). */
const DISCOVERY_INTERVAL_MS = 60_000;

export class OpenAIBackend implements ModelBackend {
  private readonly transport: ServerTransport;
  private readonly retries: RetryContext;
  private readonly tokens: PromptTokenCounter;
  /** What the server enforces (learnt from it); the operator's setting is opts.contextLength. */
  private serverContextLength?: number;
  private lastDiscovery = -Infinity;
  /** false once vLLM refused tool_choice "auto": tools are sent with "none" and the raw markup parsed here. */
  private autoToolChoice = true;

  constructor(private readonly opts: OpenAIBackendOptions) {
    this.transport = new ServerTransport(serverUrls(opts.baseUrl), {
      apiKey: opts.apiKey,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      stallTimeoutMs: opts.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
      fetch: opts.fetch ?? globalThis.fetch.bind(globalThis),
    });
    this.retries = {
      transport: this.transport,
      policy: {
        ...DEFAULT_RETRY_POLICY,
        ...opts.retry,
        maxRetries: opts.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries,
      },
      sleep: opts.sleep ?? defaultSleep,
      random: opts.random ?? Math.random,
      onRetry: opts.onRetry,
      onContextLength: (n) => this.learnContextLength(n),
      refuseAutoToolChoice: () => this.refuseAutoToolChoice(),
    };
    const request = this.transport.request.bind(this.transport);
    const learn = (n: number | null | undefined) => this.learnContextLength(n);
    this.tokens = new PromptTokenCounter(this.transport.urls.rootUrl, opts.model, request, learn);
  }

  /** The usable context: the smaller of the operator's setting and the server's, whichever are known. */
  get contextLength(): number | undefined {
    const known = [this.opts.contextLength, this.serverContextLength].filter(
      (n): n is number => typeof n === 'number' && n > 0,
    );
    return known.length ? Math.min(...known) : undefined;
  }

  private get contextWindow(): ContextWindow {
    return { usable: this.contextLength, server: this.serverContextLength };
  }

  info(): BackendInfo {
    const info: BackendInfo = {
      backend: 'openai',
      model: this.opts.model,
      device: `remote ${this.transport.displayUrl}`,
    };
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
    if (!this.serverContextLength) this.learnContextLength(await propsContextLength(this.transport, signal));
  }

  async generate(messages: ChatMessage[], tools: ToolSpec[], options: GenerateOptions = {}): Promise<GenerateResult> {
    const started = performance.now();
    const call = new GenerationCall(messages, tools, options, this.opts);
    try {
      await this.discover(options.signal);
      // Two rounds at most: a server that names a smaller context than we knew gets the clamped request once.
      for (let round = 0; ; round++) {
        const prompt = this.contextLength ? await this.tokens.count(messages, tools, call.templateKwargs) : undefined;
        const maxTokens = this.maxTokensFor(prompt, options.maxNewTokens);
        try {
          const wire = await withRetries(this.retries, {
            signal: options.signal,
            attempt: (signal) =>
              this.transport.chatCompletion(
                call.body(maxTokens, this.autoToolChoice),
                signal,
                call.stream,
                call.onDelta,
              ),
            deliveredOutput: () => call.partial.length > 0,
            onRetry: options.onRetry,
          });
          return toResult(wire, { messages, tools, started, maxTokens, contextLength: this.contextLength });
        } catch (e) {
          if (round > 0 || !(await this.smallerRequestFits(e, call, maxTokens))) throw e;
        }
      }
    } catch (e) {
      if (options.signal?.aborted) return abortedResult(messages, tools, call.partial, started);
      throw e;
    }
  }

  async countTokens(messages: ChatMessage[], tools: ToolSpec[]): Promise<number> {
    return (await this.tokens.count(messages, tools, templateKwargsFor({}, this.opts.extraBody))).tokens;
  }

  /** GET /models: is the server up and does it serve our model? Never throws. */
  async ping(signal?: AbortSignal): Promise<PingResult> {
    const shown = this.transport.displayUrl;
    const r = await this.transport.request('GET', `${this.transport.urls.baseUrl}/models`, undefined, signal);
    if (r.error !== undefined)
      return { ok: false, models: [], message: this.transport.clean(`cannot reach ${shown}: ${r.error}`) };
    if (r.status < 200 || r.status >= 300) {
      return {
        ok: false,
        models: [],
        message: this.transport.clean(describeHttpError(shown, r.status, r.statusText, r.text)),
      };
    }
    const list = ModelListSchema.safeParse(r.json);
    if (!list.success)
      return { ok: false, models: [], message: `${shown}/models did not return an OpenAI model list.` };
    const models = list.data.data.map((m) => m.id);
    const model = this.opts.model;
    const ours = list.data.data.find((m) => m.id === model || m.aliases?.includes(model));
    if (!ours) {
      const llamacpp = list.data.data.some((m) => m.owned_by === 'llamacpp');
      const fix = llamacpp
        ? `start llama-server with --alias ${model}, or set FROGNANO_OPENAI_MODEL`
        : 'set FROGNANO_OPENAI_MODEL';
      const served = models.join(', ') || 'nothing';
      return {
        ok: false,
        models,
        message: `${shown} is up but does not serve "${model}" (it serves: ${served}); ${fix}.`,
      };
    }
    this.learnContextLength(ours.max_model_len ?? ours.meta?.n_ctx ?? undefined);
    const ctx = this.serverContextLength ? `, context ${this.serverContextLength} tokens` : '';
    return { ok: true, models, message: `${shown} serves "${model}"${ctx}.` };
  }

  /** Does the server answer with parsed tool calls (see probes.ts)? Never throws. */
  probeToolCalls(signal?: AbortSignal): Promise<ToolCallProbeResult> {
    return probeToolCalls(this.transport, this.opts.model, signal);
  }

  private learnContextLength(n: number | null | undefined): void {
    if (typeof n === 'number' && n > 0) this.serverContextLength = n;
  }

  private refuseAutoToolChoice(): boolean {
    if (!this.autoToolChoice) return false;
    this.autoToolChoice = false;
    this.opts.onWarning?.(
      `${this.transport.displayUrl} refuses tool_choice "auto": parsing the model's raw tool-call markup instead ` +
        `(start vLLM with ${VLLM_TOOL_FLAGS}).`,
    );
    return true;
  }

  private maxTokensFor(prompt: PromptCount | undefined, cap: number | undefined): number | undefined {
    const choice = chooseMaxTokens(prompt, cap, this.contextWindow);
    if (choice.why) this.opts.onDebug?.(choice.why);
    return choice.maxTokens;
  }

  /**
   * After a full-context error that named the server's context: would a clamped max_tokens fit? The server's own
   * count of the prompt, when it said one, wins over ours.
   */
  private async smallerRequestFits(e: unknown, call: GenerationCall, maxTokens: number | undefined): Promise<boolean> {
    if (!(e instanceof ContextOverflowError) || maxTokens === undefined || !e.contextLength) return false;
    const counted = await this.tokens.count(call.messages, call.tools, call.templateKwargs);
    const serverCounted = e.promptTokens !== undefined;
    const prompt = { tokens: Math.max(counted.tokens, e.promptTokens ?? 0), exact: counted.exact || serverCounted };
    // Only a look: the next round chooses (and logs) its max_tokens itself.
    const retryWith = chooseMaxTokens(prompt, call.options.maxNewTokens, this.contextWindow).maxTokens;
    return retryWith !== undefined && retryWith < maxTokens;
  }
}

/** One generate call: what it sends and the text it has streamed so far. */
class GenerationCall {
  readonly stream: boolean;
  /** The template kwargs its requests send, so token counts render the same prompt. */
  readonly templateKwargs: unknown;
  partial = '';

  constructor(
    readonly messages: ChatMessage[],
    readonly tools: ToolSpec[],
    readonly options: GenerateOptions,
    private readonly backend: Pick<OpenAIBackendOptions, 'model' | 'stream' | 'extraBody'>,
  ) {
    this.stream = backend.stream !== false || typeof options.onToken === 'function';
    this.templateKwargs = templateKwargsFor(options, backend.extraBody);
  }

  body(maxTokens: number | undefined, autoToolChoice: boolean): Record<string, unknown> {
    return chatRequestBody({
      model: this.backend.model,
      messages: this.messages,
      tools: this.tools,
      options: this.options,
      toolChoice: autoToolChoice ? 'auto' : 'none',
      maxTokens,
      stream: this.stream,
      extraBody: this.backend.extraBody,
    });
  }

  readonly onDelta = (delta: string): void => {
    if (!this.options.onToken) return;
    this.partial += delta;
    this.options.onToken(delta);
  };
}
