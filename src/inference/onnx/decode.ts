/**
 * The generic decoding loop over an onnxruntime session: feeds token ids (or their embeddings), positions and
 * the attention mask, carries every `present*` output back into its `past_*` input, and picks the next token.
 * Nothing here knows the architecture; the state layout comes from the session metadata (stateLayout.ts).
 */
import * as ort from 'onnxruntime-node';
import { ModelError } from '../types.js';
import { castFloat, halfTable } from './float16.js';
import type { ModelConfig } from './modelFiles.js';
import { sampleToken, type Rng, type SamplingOptions } from './sampling.js';
import { discoverStateSpecs, emptyState, isStateInput, type DecoderState, type StateSpec } from './stateLayout.js';

export interface DecoderOptions {
  /** Prompt tokens per session.run during prefill; bounds the attention score matrix of long prompts. Default 512. */
  prefillChunkSize?: number;
  /**
   * Most bytes one prefill run may return as logits. A graph without `num_logits_to_keep` returns a row per
   * prompt token (a 512-token chunk on a 248,320-token vocabulary is ~509 MB of float32) though only the last is
   * used, so the chunk is shortened to fit. Default 64 MiB.
   */
  prefillLogitsBudgetBytes?: number;
}

export const DEFAULT_PREFILL_CHUNK = 512;
export const DEFAULT_PREFILL_LOGITS_BUDGET = 64 * 1024 * 1024;

type Metadata = { name: string; isTensor?: boolean; type?: string; shape?: readonly unknown[] };

/** Inputs the loop knows how to fill; anything else a graph asks for is reported instead of guessed. */
const KNOWN_INPUTS = new Set([
  'input_ids',
  'inputs_embeds',
  'attention_mask',
  'position_ids',
  'num_logits_to_keep',
  'logits_to_keep',
  'use_cache_branch',
]);

export class OnnxDecoder {
  readonly specs: StateSpec[];
  /** True when every carried tensor is KV, i.e. a state can be rewound to any earlier length. */
  readonly rewindable: boolean;
  private readonly inputNames: Set<string>;
  private readonly positionRank: number;
  /** Prompt tokens per prefill run, after the logits budget (see DecoderOptions). */
  readonly prefillChunkSize: number;
  /** True when the graph takes `num_logits_to_keep` / `logits_to_keep` and so returns the last row only. */
  readonly keepsLastLogitsOnly: boolean;
  /** Element type the decoder wants for `inputs_embeds`, when it takes them (an fp16 graph wants float16). */
  private readonly embedsType?: string;
  /** Feeds that are the same on every run, built once rather than per token. */
  private readonly constantFeeds: Record<string, ort.Tensor> = {};

  constructor(
    readonly session: ort.InferenceSession,
    config: ModelConfig,
    private readonly embedSession?: ort.InferenceSession,
    opts: DecoderOptions = {},
  ) {
    this.inputNames = new Set(session.inputNames);
    this.specs = discoverStateSpecs(session, config);
    this.rewindable = this.specs.every((s) => s.kind === 'sequence');
    if (!session.outputNames.includes('logits')) throw new ModelError('model has no `logits` output');
    const unknown = session.inputNames.filter((n) => !KNOWN_INPUTS.has(n) && !isStateInput(n));
    if (unknown.length) throw new ModelError(`model needs inputs this backend cannot provide: ${unknown.join(', ')}`);
    if (!this.inputNames.has('input_ids')) {
      if (!this.inputNames.has('inputs_embeds'))
        throw new ModelError('model takes neither input_ids nor inputs_embeds');
      if (!embedSession) {
        throw new ModelError('the decoder takes inputs_embeds but no embed_tokens.onnx was found next to it');
      }
    }
    const inputMeta = session.inputMetadata as readonly Metadata[];
    const posMeta = inputMeta.find((m) => m.name === 'position_ids');
    this.embedsType = inputMeta.find((m) => m.name === 'inputs_embeds')?.type;
    // Qwen-VL style exports (Qwen3.5 included) take M-RoPE positions as [3, batch, seq].
    this.positionRank = posMeta?.shape?.length === 3 ? 3 : 2;
    // Only the last position's logits are needed; exports that can skip the rest say so with this input.
    for (const name of ['num_logits_to_keep', 'logits_to_keep']) {
      if (this.inputNames.has(name)) this.constantFeeds[name] = new ort.Tensor('int64', BigInt64Array.of(1n), []);
    }
    this.keepsLastLogitsOnly = Object.keys(this.constantFeeds).length > 0;
    this.prefillChunkSize = prefillChunkFor(session, config, this.keepsLastLogitsOnly, opts);
  }

  newState(): DecoderState {
    return emptyState(this.specs);
  }

  /**
   * Consumes `ids` on top of `state` and returns the logits after the last of them plus the new state.
   * The input state is not modified (onnxruntime returns fresh output tensors), so callers may keep it.
   */
  async forward(
    ids: number[],
    state: DecoderState,
    signal?: AbortSignal,
  ): Promise<{ logits: Float32Array; state: DecoderState }> {
    if (ids.length === 0) throw new Error('forward needs at least one token');
    let current = state;
    let logits: Float32Array | undefined;
    for (let start = 0; start < ids.length; start += this.prefillChunkSize) {
      // A long prompt takes many chunks; a cancelled job should not wait for all of them.
      if (signal?.aborted) throw new PrefillAborted();
      const chunk = ids.slice(start, start + this.prefillChunkSize);
      ({ logits, state: current } = await this.step(chunk, current));
    }
    return { logits: logits!, state: current };
  }

  private async step(ids: number[], state: DecoderState): Promise<{ logits: Float32Array; state: DecoderState }> {
    const n = ids.length;
    const past = state.length;
    const feeds: Record<string, ort.Tensor> = { ...this.constantFeeds };
    const idTensor = new ort.Tensor(
      'int64',
      BigInt64Array.from(ids, (i) => BigInt(i)),
      [1, n],
    );
    if (this.inputNames.has('input_ids')) {
      feeds.input_ids = idTensor;
    } else {
      const out = await this.embedSession!.run({ input_ids: idTensor });
      feeds.inputs_embeds = castFloat(out[this.embedSession!.outputNames[0]!]!, this.embedsType);
    }
    if (this.inputNames.has('attention_mask')) {
      feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(past + n).fill(1n), [1, past + n]);
    }
    if (this.inputNames.has('position_ids')) {
      const row = BigInt64Array.from({ length: n }, (_, i) => BigInt(past + i));
      feeds.position_ids =
        this.positionRank === 3
          ? new ort.Tensor(
              'int64',
              BigInt64Array.from({ length: 3 * n }, (_, i) => row[i % n]!),
              [3, 1, n],
            )
          : new ort.Tensor('int64', row, [1, n]);
    }
    if (this.inputNames.has('use_cache_branch')) feeds.use_cache_branch = new ort.Tensor('bool', [past > 0], [1]);
    for (const spec of this.specs) feeds[spec.input] = state.tensors.get(spec.input)!;

    const out = await this.session.run(feeds);
    const next = new Map<string, ort.Tensor>();
    for (const spec of this.specs) next.set(spec.input, out[spec.output]!);
    return { logits: lastRow(out.logits!), state: { tensors: next, length: past + n } };
  }
}

/**
 * Prompt tokens per prefill run: the configured chunk, shortened when the graph returns logits for every
 * position so that one run's logits stay within the budget.
 */
function prefillChunkFor(
  session: ort.InferenceSession,
  config: ModelConfig,
  lastOnly: boolean,
  opts: DecoderOptions,
): number {
  const chunk = Math.max(1, opts.prefillChunkSize ?? DEFAULT_PREFILL_CHUNK);
  if (lastOnly) return chunk;
  const logitsMeta = (session.outputMetadata as readonly Metadata[]).find((m) => m.name === 'logits');
  const lastDim = logitsMeta?.shape?.[logitsMeta.shape.length - 1];
  const vocab = typeof lastDim === 'number' && lastDim > 0 ? lastDim : config.vocab_size;
  if (typeof vocab !== 'number' || vocab <= 0) return chunk;
  const bytesPerLogit = logitsMeta?.type === 'float16' ? 2 : 4;
  const budget = opts.prefillLogitsBudgetBytes ?? DEFAULT_PREFILL_LOGITS_BUDGET;
  return Math.max(1, Math.min(chunk, Math.floor(budget / (vocab * bytesPerLogit))));
}

export class PrefillAborted extends Error {
  constructor() {
    super('prefill aborted');
    this.name = 'PrefillAborted';
  }
}

/** The last position's logits as float32, whatever the export's logits dtype. */
export function lastRow(logits: ort.Tensor): Float32Array {
  const dims = logits.dims;
  const vocab = dims[dims.length - 1]!;
  const total = dims.reduce((a, b) => a * b, 1);
  const start = total - vocab;
  if (logits.type === 'float32') {
    // A decode step's logits are a single row already: use them as they are. A prefill's [1, n, vocab] block
    // is copied from, so the whole block is not kept alive by a view of its last row.
    const data = logits.data as Float32Array;
    return start === 0 ? data : data.slice(start, total);
  }
  if (logits.type === 'float16') {
    const raw = logits.data as Uint16Array;
    const table = halfTable();
    const out = new Float32Array(vocab);
    for (let i = 0; i < vocab; i++) out[i] = table[raw[start + i]!]!;
    return out;
  }
  throw new ModelError(`unsupported logits type ${logits.type}`);
}

export type StopReason = 'eos' | 'stop_string' | 'length' | 'aborted';

export interface DecodeLoopOptions extends SamplingOptions {
  maxNewTokens: number;
  eosTokenIds: ReadonlySet<number>;
  rng: Rng;
  /** The prompt's token ids: with a repetition penalty, they count as seen (as in transformers and vLLM). */
  promptIds?: readonly number[];
  signal?: AbortSignal;
  /** Called with each new token; return true to stop after it (e.g. a stop string completed). */
  onTokenId?: (id: number) => boolean | void;
}

export interface DecodeLoopResult {
  /** Generated token ids, end-of-turn token excluded. */
  tokens: number[];
  reason: StopReason;
  /** State after every token that was fed back (the last sampled token is never fed). */
  state: DecoderState;
}

/** Samples from `logits`, feeds the token back, repeats until eos, a stop request, the cap or an abort. */
export async function decodeLoop(
  decoder: OnnxDecoder,
  firstLogits: Float32Array,
  state: DecoderState,
  opts: DecodeLoopOptions,
): Promise<DecodeLoopResult> {
  const tokens: number[] = [];
  let logits = firstLogits;
  let current = state;
  const penalised = opts.repetitionPenalty !== undefined && opts.repetitionPenalty !== 1;
  const seen = penalised ? new Set<number>(opts.promptIds ?? []) : undefined;
  while (true) {
    if (opts.signal?.aborted) return { tokens, reason: 'aborted', state: current };
    if (tokens.length >= opts.maxNewTokens) return { tokens, reason: 'length', state: current };
    const id = sampleToken(logits, opts, opts.rng, seen);
    if (opts.eosTokenIds.has(id)) return { tokens, reason: 'eos', state: current };
    tokens.push(id);
    seen?.add(id);
    if (opts.onTokenId?.(id)) return { tokens, reason: 'stop_string', state: current };
    if (tokens.length >= opts.maxNewTokens) return { tokens, reason: 'length', state: current };
    ({ logits, state: current } = await decoder.forward([id], current));
  }
}
