/**
 * The generic decoding loop over an onnxruntime session: feeds token ids (or their embeddings), positions and
 * the attention mask, carries every `present*` output back into its `past_*` input, and picks the next token.
 * Nothing here knows the architecture; the state layout comes from the session metadata (stateLayout.ts).
 */
import * as ort from 'onnxruntime-node';
import { ModelError } from '../types.js';
import type { ModelConfig } from './modelFiles.js';
import { sampleToken, type Rng, type SamplingOptions } from './sampling.js';
import { discoverStateSpecs, emptyState, isStateInput, type DecoderState, type StateSpec } from './stateLayout.js';

export interface DecoderOptions {
  /** Prompt tokens per session.run during prefill; bounds the attention score matrix of long prompts. */
  prefillChunkSize?: number;
}

/** Inputs the loop knows how to fill; anything else a graph asks for is reported instead of guessed. */
const KNOWN_INPUTS = new Set(['input_ids', 'inputs_embeds', 'attention_mask', 'position_ids', 'num_logits_to_keep', 'logits_to_keep', 'use_cache_branch']);

export class OnnxDecoder {
  readonly specs: StateSpec[];
  /** True when every carried tensor is KV, i.e. a state can be rewound to any earlier length. */
  readonly rewindable: boolean;
  private readonly inputNames: Set<string>;
  private readonly positionRank: number;
  private readonly prefillChunkSize: number;
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
    this.prefillChunkSize = Math.max(1, opts.prefillChunkSize ?? 512);
    if (!session.outputNames.includes('logits')) throw new ModelError('model has no `logits` output');
    const unknown = session.inputNames.filter((n) => !KNOWN_INPUTS.has(n) && !isStateInput(n));
    if (unknown.length) throw new ModelError(`model needs inputs this backend cannot provide: ${unknown.join(', ')}`);
    if (!this.inputNames.has('input_ids')) {
      if (!this.inputNames.has('inputs_embeds')) throw new ModelError('model takes neither input_ids nor inputs_embeds');
      if (!embedSession) {
        throw new ModelError('the decoder takes inputs_embeds but no embed_tokens.onnx was found next to it');
      }
    }
    const posMeta = (session.inputMetadata as readonly { name: string; shape?: readonly unknown[] }[]).find((m) => m.name === 'position_ids');
    // Qwen-VL style exports (Qwen3.5 included) take M-RoPE positions as [3, batch, seq].
    this.positionRank = posMeta?.shape?.length === 3 ? 3 : 2;
    // Only the last position's logits are needed; exports that can skip the rest say so with this input.
    for (const name of ['num_logits_to_keep', 'logits_to_keep']) {
      if (this.inputNames.has(name)) this.constantFeeds[name] = new ort.Tensor('int64', BigInt64Array.of(1n), []);
    }
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
    const idTensor = new ort.Tensor('int64', BigInt64Array.from(ids, (i) => BigInt(i)), [1, n]);
    if (this.inputNames.has('input_ids')) {
      feeds.input_ids = idTensor;
    } else {
      const out = await this.embedSession!.run({ input_ids: idTensor });
      feeds.inputs_embeds = out[this.embedSession!.outputNames[0]!]!;
    }
    if (this.inputNames.has('attention_mask')) {
      feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(past + n).fill(1n), [1, past + n]);
    }
    if (this.inputNames.has('position_ids')) {
      const row = BigInt64Array.from({ length: n }, (_, i) => BigInt(past + i));
      feeds.position_ids =
        this.positionRank === 3
          ? new ort.Tensor('int64', BigInt64Array.from({ length: 3 * n }, (_, i) => row[i % n]!), [3, 1, n])
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

/**
 * Every float16 bit pattern's value, built on first use: a lookup per logit instead of a halfToFloat call
 * (for a 248K vocabulary, well under a millisecond per token rather than tens of milliseconds).
 */
let halfValues: Float32Array | undefined;
function halfTable(): Float32Array {
  if (!halfValues) {
    halfValues = new Float32Array(0x10000);
    for (let h = 0; h < 0x10000; h++) halfValues[h] = halfToFloat(h);
  }
  return halfValues;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
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
