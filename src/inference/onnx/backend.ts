/**
 * In-process model backend: onnxruntime-node runs the exported graph, @huggingface/transformers provides the
 * tokenizer and the model's own chat template. Works offline against a local model directory
 * (see modelFiles.ts for the accepted layouts).
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { parseAssistantOutput } from '../toolCallParser.js';
import { LEAF_EVAL_SAMPLING } from '../leafSampling.js';
import {
  ContextOverflowError,
  ModelError,
  type BackendInfo,
  type ChatMessage,
  type FinishReason,
  type GenerateOptions,
  type GenerateResult,
  type ModelBackend,
  type ToolSpec,
} from '../types.js';
import { decodeLoop, OnnxDecoder, PrefillAborted, type DecodeLoopResult } from './decode.js';
import { IncrementalDetokenizer } from './detokenize.js';
import { StoppableText } from './textStream.js';
import { CheckpointFinder } from './checkpoints.js';
import { locateModelFiles, type ModelConfig, type ModelFiles } from './modelFiles.js';
import { PrefixCache } from './prefixCache.js';
import { createRng } from './sampling.js';
import type { DecoderState } from './stateLayout.js';
import { encodePrompt, loadTokenizer, renderPrompt, singleTokenId, type HfTokenizer } from './tokenizer.js';

/** What the backend loaded, for `frognano doctor` and logs. Paths are relative to the model directory. */
export interface OnnxModelReport {
  decoder: string;
  embed?: string;
  dtype: string;
  chatTemplate: string;
  prefillChunkSize: number;
}

export interface OnnxBackendOptions {
  /** Graph file relative to the model directory, when the export has several (e.g. quantized variants). */
  modelFile?: string;
  /** Weight type of a hub export with variants (`fp32`, `fp16`, `q4`, `q4f16`, `q8`, ...); see modelFiles.ts. */
  dtype?: string;
  /** onnxruntime execution providers, in order of preference. Default: ['cpu']. */
  executionProviders?: string[];
  intraOpNumThreads?: number;
  /** Keep decoder state between calls and prefill only the new part of the prompt. Default: true. */
  prefixCache?: boolean;
  /** States kept for reuse (each holds a KV copy). Default: 2 (end of prompt, end of generation). */
  prefixCacheEntries?: number;
  /**
   * Also keep pinned states at the end of the last user message and at the start of the first user turn, so a
   * user follow-up (or a new conversation with the same tools) reuses them; see checkpoints.ts. Default: true
   * for models whose state cannot be rewound (Qwen3.5's linear attention).
   */
  pinnedCheckpoints?: boolean;
  /** Prompt tokens per prefill run. Default: 512, shortened to keep one run's logits within the budget. */
  prefillChunkSize?: number;
  /** Most bytes of logits one prefill run may return (graphs without num_logits_to_keep). Default: 64 MiB. */
  prefillLogitsBudgetBytes?: number;
  /** Qwen3.5 `enable_thinking` for generate() calls that do not say. Default: upstream Leaf's (true). */
  enableThinking?: boolean;
  /** Overrides config.json's max_position_embeddings. */
  contextLength?: number;
  /** Name reported by info(); default: the model directory's name. */
  modelName?: string;
}

/** A rendered, encoded prompt that fits the context. */
interface PreparedPrompt {
  promptIds: number[];
  promptTokens: number;
  maxNewTokens: number;
  /** The template opened a <think> block: the answer starts inside it. */
  startsInThinking: boolean;
}

/** Idle time after a turn without tool calls before the follow-up state is prefilled in the background. */
const FOLLOW_UP_IDLE_MS = 250;

function toIdList(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

export class OnnxBackend implements ModelBackend {
  private readonly cache?: PrefixCache;
  private readonly checkpoints?: CheckpointFinder;
  private readonly contextLength: number;
  /** enable_thinking of the latest generate() call (or the option), so countTokens renders the same prompt. */
  private enableThinking: boolean;
  /** Stops the background follow-up prefill when real work arrives. */
  private idleWork?: AbortController;
  /** generate() calls queued or running. */
  private pending = 0;
  /** One generation at a time: the session and the prefix cache are shared state. */
  private queue: Promise<unknown> = Promise.resolve();
  private turn = 0;
  private closed = false;
  /**
   * The last two prompts encoded: the Leaf loop counts a prompt's tokens right before generating from it, and counts
   * its tool messages (a small prompt of their own) in between, which must not push the big one out.
   */
  private encoded: { prompt: string; ids: number[] }[] = [];

  private constructor(
    readonly decoder: OnnxDecoder,
    readonly tokenizer: HfTokenizer,
    config: ModelConfig,
    private readonly eosTokenIds: ReadonlySet<number>,
    private readonly meta: { model: string; device: string; sessions: ort.InferenceSession[]; report: OnnxModelReport },
    opts: OnnxBackendOptions,
  ) {
    this.contextLength = opts.contextLength ?? config.max_position_embeddings ?? 131072;
    this.enableThinking = opts.enableThinking ?? LEAF_EVAL_SAMPLING.enableThinking;
    if (opts.prefixCache !== false) {
      this.cache = new PrefixCache(decoder, opts.prefixCacheEntries ?? 2);
      if (opts.pinnedCheckpoints ?? !decoder.rewindable) {
        this.checkpoints = new CheckpointFinder(tokenizer, singleTokenId(tokenizer, '<|im_start|>'));
      }
    }
  }

  static async load(modelDir: string, opts: OnnxBackendOptions = {}): Promise<OnnxBackend> {
    const files = await locateModelFiles(modelDir, { modelFile: opts.modelFile, dtype: opts.dtype });
    const tokenizer = await loadTokenizer(files.dir);
    useChatTemplate(tokenizer, files);
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      executionProviders: opts.executionProviders ?? ['cpu'],
      graphOptimizationLevel: 'all',
      ...(opts.intraOpNumThreads ? { intraOpNumThreads: opts.intraOpNumThreads } : {}),
    };
    const create = async (file: string) => {
      try {
        return await ort.InferenceSession.create(file, sessionOptions);
      } catch (err) {
        const message = (err as Error).message;
        // The npm package ships CPU binaries only; the CUDA provider is a separate download.
        const hint =
          sessionOptions.executionProviders!.includes('cuda') && /cuda|provider/i.test(message)
            ? " (the CUDA provider needs onnxruntime-node's CUDA 12 binaries: run `ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js` on the runner, or use device cpu)"
            : '';
        throw new ModelError(`onnxruntime cannot load ${file}: ${message}${hint}`);
      }
    };
    const session = await create(files.decoderPath);
    const takesEmbeddings = !session.inputNames.includes('input_ids') && session.inputNames.includes('inputs_embeds');
    if (takesEmbeddings && !files.embedPath) {
      await session.release();
      throw new ModelError(
        `the decoder takes inputs_embeds but no embed_tokens.onnx (or embed_tokens_<dtype>.onnx) was found next to it; ` +
          `${files.dir} holds ${files.graphs.join(', ')}`,
      );
    }
    const embedSession = takesEmbeddings ? await create(files.embedPath!) : undefined;
    const decoder = new OnnxDecoder(session, files.config, embedSession, {
      prefillChunkSize: opts.prefillChunkSize,
      prefillLogitsBudgetBytes: opts.prefillLogitsBudgetBytes,
    });

    // End of turn: what the configs declare, plus Qwen's turn/document markers when the vocabulary has them.
    const eos = new Set([...toIdList(files.generationConfig.eos_token_id), ...toIdList(files.config.eos_token_id)]);
    for (const marker of ['<|im_end|>', '<|endoftext|>']) {
      const id = singleTokenId(tokenizer, marker);
      if (id !== undefined) eos.add(id);
    }
    if (eos.size === 0)
      throw new ModelError(`no end-of-turn token found in ${files.dir} (config eos_token_id, <|im_end|>)`);

    return new OnnxBackend(
      decoder,
      tokenizer,
      files.config,
      eos,
      {
        model: opts.modelName ?? path.basename(files.dir),
        device: (opts.executionProviders ?? ['cpu']).join(','),
        sessions: embedSession ? [session, embedSession] : [session],
        report: {
          decoder: path.relative(files.dir, files.decoderPath),
          ...(embedSession && files.embedPath ? { embed: path.relative(files.dir, files.embedPath) } : {}),
          dtype: files.dtype,
          chatTemplate: files.chatTemplate.file,
          prefillChunkSize: decoder.prefillChunkSize,
        },
      },
      opts,
    );
  }

  /** Which files, weight type and template source were picked. */
  modelReport(): OnnxModelReport {
    return { ...this.meta.report };
  }

  /** Lengths of the cached states (tests and benchmarks). */
  cachedStates(): { tokens: number; pin?: string }[] {
    return this.cache?.describe() ?? [];
  }

  info(): BackendInfo {
    return { backend: 'onnx', model: this.meta.model, contextLength: this.contextLength, device: this.meta.device };
  }

  /**
   * The exact prompt text the model sees for this conversation (chat template with the generation prompt).
   * `enableThinking` defaults to what the latest generate() call asked for.
   */
  renderPrompt(messages: ChatMessage[], tools: ToolSpec[], enableThinking = this.enableThinking): string {
    return renderPrompt(this.tokenizer, messages, tools, { enableThinking });
  }

  async countTokens(messages: ChatMessage[], tools: ToolSpec[]): Promise<number> {
    return this.encode(this.renderPrompt(messages, tools)).length;
  }

  /** Token ids of a rendered prompt; a prompt among the last two encoded is not encoded again. */
  private encode(prompt: string): number[] {
    let hit = this.encoded.find((e) => e.prompt === prompt);
    if (!hit) {
      hit = { prompt, ids: encodePrompt(this.tokenizer, prompt) };
      this.encoded = [hit, ...this.encoded].slice(0, 2);
    }
    return hit.ids;
  }

  generate(messages: ChatMessage[], tools: ToolSpec[], options: GenerateOptions = {}): Promise<GenerateResult> {
    // Background work yields to a real request (it stops at its next prefill chunk).
    this.idleWork?.abort();
    this.pending++;
    const run = () => this.generateNow(messages, tools, options).finally(() => this.pending--);
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async generateNow(
    messages: ChatMessage[],
    tools: ToolSpec[],
    options: GenerateOptions,
  ): Promise<GenerateResult> {
    if (this.closed) throw new ModelError('the onnx backend was closed');
    const started = Date.now();
    if (options.enableThinking !== undefined) this.enableThinking = options.enableThinking;
    const prompt = this.preparePrompt(messages, tools, options.maxNewTokens);
    const { promptIds, promptTokens } = prompt;
    const abortedResult = (prefillTokens: number): GenerateResult => ({
      promptTokens,
      parseErrors: [],
      message: { role: 'assistant', content: '' },
      finishReason: 'aborted',
      prefillTokens,
      completionTokens: 0,
      rawText: '',
      elapsedMs: Date.now() - started,
    });
    if (options.signal?.aborted) return abortedResult(0);

    // Prefill: only what the cache does not already hold.
    const hit = this.cache?.lookup(promptIds) ?? { reused: 0 };
    const prefillTokens = promptTokens - hit.reused;
    let prefilled;
    try {
      prefilled = await this.prefill(messages, tools, promptIds, hit.reused, hit.state, options.signal);
    } catch (err) {
      if (err instanceof PrefillAborted) return abortedResult(prefillTokens);
      throw new ModelError(`onnxruntime failed during prefill: ${(err as Error).message}`);
    }
    this.cache?.store(promptIds, prefilled.state);

    const { text, loop } = await this.decode(prefilled, prompt, options);
    // Keep the post-generation state too: when the template re-renders this turn exactly, next turn reuses it.
    const fedIds = [...promptIds, ...loop.tokens].slice(0, loop.state.length);
    this.cache?.store(fedIds, loop.state);

    const parsed = parseAssistantOutput(text, {
      idPrefix: `onnx${++this.turn}`,
      tools,
      startsInThinking: prompt.startsInThinking,
    });
    const message: ChatMessage = { role: 'assistant', content: parsed.content };
    if (parsed.reasoning) message.reasoning = parsed.reasoning;
    if (parsed.toolCalls.length) message.tool_calls = parsed.toolCalls;
    const finishReason: FinishReason =
      loop.reason === 'aborted' || loop.reason === 'length'
        ? loop.reason
        : parsed.toolCalls.length
          ? 'tool_calls'
          : 'stop';
    // No tool call: the run may end here and a user may follow up later; get ready for that while idle.
    if (finishReason !== 'aborted' && !parsed.toolCalls.length) this.prepareFollowUp(messages, tools);
    return {
      promptTokens,
      message,
      finishReason,
      prefillTokens,
      completionTokens: loop.tokens.length,
      parseErrors: parsed.errors,
      rawText: text,
      elapsedMs: Date.now() - started,
    };
  }

  /** The prompt's tokens and how many new ones the context leaves; throws when it does not fit. */
  private preparePrompt(messages: ChatMessage[], tools: ToolSpec[], cap: number | undefined): PreparedPrompt {
    const prompt = this.renderPrompt(messages, tools);
    const promptIds = this.encode(prompt);
    const promptTokens = promptIds.length;
    if (promptTokens === 0) throw new ModelError('the chat template rendered an empty prompt');
    if (promptTokens >= this.contextLength) {
      const message = `prompt of ${promptTokens} tokens does not fit the ${this.contextLength}-token context`;
      throw new ContextOverflowError(message, promptTokens, this.contextLength);
    }
    return {
      promptIds,
      promptTokens,
      // No per-turn cap unless the caller sets one (upstream Leaf's max_tokens_per_turn is null): what the context leaves.
      maxNewTokens: Math.min(cap ?? Infinity, this.contextLength - promptTokens),
      startsInThinking: /<think>\s*$/.test(prompt),
    };
  }

  /** Decodes from the prefilled state, streaming text to onToken and stopping at a stop string. */
  private async decode(
    prefilled: { logits: Float32Array; state: DecoderState },
    prompt: PreparedPrompt,
    options: GenerateOptions,
  ): Promise<{ text: string; loop: DecodeLoopResult }> {
    const detok = new IncrementalDetokenizer((ids) => this.tokenizer.decode(ids, { skip_special_tokens: false }));
    const text = new StoppableText(options.stop, options.onToken);
    let loop: DecodeLoopResult;
    try {
      loop = await decodeLoop(this.decoder, prefilled.logits, prefilled.state, {
        maxNewTokens: prompt.maxNewTokens,
        eosTokenIds: this.eosTokenIds,
        // Unset fields fall back to upstream Leaf's eval sampling, as in the other backends.
        temperature: options.temperature ?? LEAF_EVAL_SAMPLING.temperature,
        topK: options.topK ?? LEAF_EVAL_SAMPLING.topK,
        topP: options.topP ?? LEAF_EVAL_SAMPLING.topP,
        minP: options.minP ?? LEAF_EVAL_SAMPLING.minP,
        repetitionPenalty: options.repetitionPenalty ?? LEAF_EVAL_SAMPLING.repetitionPenalty,
        promptIds: prompt.promptIds,
        rng: createRng(options.seed ?? 0),
        signal: options.signal,
        onTokenId: (id) => text.push(detok.push(id)),
      });
    } catch (err) {
      throw new ModelError(`generation failed while decoding: ${(err as Error).message}`);
    }
    return { text: text.finish(() => detok.flush()), loop };
  }

  /**
   * Runs the prompt from `from` on, stopping at each pinned checkpoint on the way to keep its state
   * (the cache gets the pinned states; the caller stores the full prompt's).
   */
  private async prefill(
    messages: ChatMessage[],
    tools: ToolSpec[],
    promptIds: number[],
    from: number,
    state: DecoderState | undefined,
    signal?: AbortSignal,
  ): Promise<{ logits: Float32Array; state: DecoderState }> {
    let current = state ?? this.decoder.newState();
    let pos = from;
    for (const cp of this.checkpoints?.find(messages, tools, promptIds) ?? []) {
      if (cp.at <= pos || cp.at >= promptIds.length) continue;
      ({ state: current } = await this.decoder.forward(promptIds.slice(pos, cp.at), current, signal));
      pos = cp.at;
      this.cache!.store(promptIds.slice(0, pos), current, cp.pin);
    }
    return this.decoder.forward(promptIds.slice(pos), current, signal);
  }

  /**
   * Queues, behind the current turn, the prefill of the conversation as a follow-up user message will render it
   * (see checkpoints.ts), pinned as the `followup` state. It starts only after the backend has been idle for
   * FOLLOW_UP_IDLE_MS (a caller still talking to it comes first), and the next generate() call stops it between
   * prefill chunks. Once it is stored, the finished conversation's turn-by-turn states are dropped: a follow-up
   * re-renders that conversation anyway, and memory stays at the same number of state copies.
   */
  private prepareFollowUp(messages: ChatMessage[], tools: ToolSpec[]): void {
    // Another request is already waiting: it comes first, and may well not be a follow-up of this one.
    if (!this.checkpoints || !this.cache || this.pending > 1) return;
    const ids = this.checkpoints.followUpPrefix(messages, tools);
    if (!ids) return;
    const controller = new AbortController();
    this.idleWork = controller;
    const idle = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FOLLOW_UP_IDLE_MS);
      controller.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    const work = async () => {
      await idle;
      if (controller.signal.aborted || this.closed) return;
      const hit = this.cache!.lookup([...ids, -1]);
      if (hit.reused >= ids.length) return;
      const { state } = await this.decoder.forward(
        ids.slice(hit.reused),
        hit.state ?? this.decoder.newState(),
        controller.signal,
      );
      this.cache!.dropUnpinned();
      this.cache!.store(ids, state, 'followup');
    };
    const job = () => work().catch(() => undefined);
    this.queue = this.queue.then(job, job);
  }

  /** Resolves once queued work, the background follow-up prefill included, has finished. */
  async whenIdle(): Promise<void> {
    await this.queue.catch(() => undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.idleWork?.abort();
    await this.queue.catch(() => undefined);
    this.cache?.clear();
    for (const s of this.meta.sessions) await s.release();
  }
}

/**
 * Puts the template found in the directory on the tokenizer (transformers.js reads only tokenizer_config.json's)
 * and renders a probe conversation, so a missing or broken template fails at load time, not on the first turn.
 */
function useChatTemplate(tokenizer: HfTokenizer, files: ModelFiles): void {
  if (files.chatTemplate.text !== undefined) {
    (tokenizer as unknown as { chat_template: string }).chat_template = files.chatTemplate.text;
  }
  const probe: ChatMessage[] = [
    { role: 'system', content: 'probe' },
    { role: 'user', content: 'probe' },
  ];
  const tool: ToolSpec = {
    type: 'function',
    function: { name: 'Probe', description: 'probe', parameters: { type: 'object', properties: {} } },
  };
  try {
    renderPrompt(tokenizer, probe, [tool]);
  } catch (err) {
    throw new ModelError(
      `the chat template from ${files.chatTemplate.file} in ${files.dir} does not render: ${(err as Error).message}`,
    );
  }
}
