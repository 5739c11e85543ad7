/**
 * Discovers the decoder's carried state from the session's own input/output names and shapes, so one decoding
 * loop serves every cache layout an export may have: attention KV (`past_key_values.N.key` -> `present.N.key`,
 * growing along a sequence axis) and fixed-size states of linear-attention / conv layers (`past_conv.N` ->
 * `present_conv.N`, `past_recurrent.N` -> `present_recurrent.N`, and whatever `past_*` -> `present_*` pair
 * another architecture adds).
 */
import * as ort from 'onnxruntime-node';
import { ModelError } from '../types.js';
import type { ModelConfig } from './modelFiles.js';

export interface StateSpec {
  /** Session input fed with the previous step's value. */
  input: string;
  /** Session output holding the updated value. */
  output: string;
  /** `sequence`: grows by one row per token (KV); `fixed`: same shape every step (conv / recurrent). */
  kind: 'sequence' | 'fixed';
  /** Axis that grows, for `sequence` states. */
  seqAxis: number;
  /** Shape of the empty state (sequence axis 0, batch 1). */
  initialDims: number[];
  type: ort.Tensor.Type;
}

export interface DecoderState {
  /** Keyed by session input name. */
  tensors: Map<string, ort.Tensor>;
  /** Tokens already consumed into this state. */
  length: number;
}

type Metadata = { name: string; isTensor: boolean; type?: string; shape?: ReadonlyArray<number | string> };

/** `past_key_values.3.key` -> `present.3.key`; `past_conv.0` -> `present_conv.0`; `past_x` -> `present_x`. */
export function presentNameFor(pastName: string): string {
  if (pastName.startsWith('past_key_values.')) return `present.${pastName.slice('past_key_values.'.length)}`;
  return `present_${pastName.slice('past_'.length)}`;
}

export function isStateInput(name: string): boolean {
  return name.startsWith('past_');
}

const layerIndex = (name: string): number | undefined => {
  const m = /\.(\d+)(?:\.|$)/.exec(name);
  return m ? Number(m[1]) : undefined;
};

/** Dims from config.json for exports whose metadata leaves a state dimension symbolic. */
function dimsFromConfig(name: string, config: ModelConfig): { dims: number[]; seqAxis: number } | undefined {
  if (name.startsWith('past_key_values.')) {
    const heads = config.num_key_value_heads ?? config.num_attention_heads;
    const headDim =
      config.head_dim ??
      (config.hidden_size && config.num_attention_heads ? config.hidden_size / config.num_attention_heads : undefined);
    if (heads && headDim) return { dims: [1, heads, 0, headDim], seqAxis: 2 };
    return undefined;
  }
  const kHeads = config.linear_num_key_heads;
  const vHeads = config.linear_num_value_heads ?? kHeads;
  const kDim = config.linear_key_head_dim;
  const vDim = config.linear_value_head_dim ?? kDim;
  if (name.startsWith('past_conv.') && kHeads && vHeads && kDim && vDim && config.linear_conv_kernel_dim) {
    // Qwen3-Next / Qwen3.5 gated delta net: conv over [q | k | v] channels, `kernel` columns kept.
    return { dims: [1, 2 * kHeads * kDim + vHeads * vDim, config.linear_conv_kernel_dim], seqAxis: -1 };
  }
  if (name.startsWith('past_recurrent.') && vHeads && kDim && vDim) {
    return { dims: [1, vHeads, kDim, vDim], seqAxis: -1 };
  }
  return undefined;
}

/**
 * Reads every `past_*` input and its `present*` output. The batch axis (0) is 1; a symbolic non-batch axis of a
 * state marks it as sequence-growing (that axis starts at 0); fixed states need concrete sizes, taken from the
 * metadata or, failing that, from config.json.
 */
export function discoverStateSpecs(session: ort.InferenceSession, config: ModelConfig): StateSpec[] {
  const inputs = session.inputMetadata as readonly Metadata[];
  const outputNames = new Set(session.outputNames);
  const specs: StateSpec[] = [];
  for (const meta of inputs) {
    if (!isStateInput(meta.name)) continue;
    const output = presentNameFor(meta.name);
    if (!outputNames.has(output)) {
      throw new ModelError(`model input ${meta.name} has no matching output ${output}; cannot carry its state`);
    }
    const type = (meta.type ?? 'float32') as ort.Tensor.Type;
    const shape = meta.shape ?? [];
    const symbolic = shape.map((d, i) => (i > 0 && typeof d !== 'number' ? i : -1)).filter((i) => i >= 0);
    let dims: number[] | undefined;
    let seqAxis = -1;
    if (shape.length > 0 && symbolic.length <= 1) {
      seqAxis = symbolic[0] ?? -1;
      dims = shape.map((d, i) => (i === 0 ? 1 : i === seqAxis ? 0 : (d as number)));
      // A KV input named as such must have a growing axis; a fixed state must not start empty.
      if (meta.name.startsWith('past_key_values.') && seqAxis < 0) dims = undefined;
    }
    if (!dims) {
      const fromConfig = dimsFromConfig(meta.name, config);
      if (!fromConfig) {
        throw new ModelError(
          `cannot tell the shape of state input ${meta.name} (metadata ${JSON.stringify(shape)}, layer ${layerIndex(meta.name) ?? '?'}); ` +
            'config.json lacks the head sizes needed to build it',
        );
      }
      dims = fromConfig.dims;
      seqAxis = fromConfig.seqAxis;
    }
    specs.push({
      input: meta.name,
      output,
      kind: seqAxis >= 0 ? 'sequence' : 'fixed',
      seqAxis,
      initialDims: dims,
      type,
    });
  }
  return specs;
}

function zeros(type: ort.Tensor.Type, size: number): ort.Tensor.DataType {
  switch (type) {
    case 'float32':
      return new Float32Array(size);
    case 'float16':
      // All-zero bits are 0.0 in IEEE half precision.
      return new Uint16Array(size);
    case 'float64':
      return new Float64Array(size);
    default:
      throw new ModelError(`unsupported state tensor type ${type}`);
  }
}

export function emptyState(specs: StateSpec[]): DecoderState {
  const tensors = new Map<string, ort.Tensor>();
  for (const s of specs) {
    const size = s.initialDims.reduce((a, b) => a * b, 1);
    tensors.set(s.input, new ort.Tensor(s.type, zeros(s.type, size), s.initialDims));
  }
  return { tensors, length: 0 };
}

/** Keeps the first `keep` positions of a sequence-growing tensor (a copy; the source stays valid). */
export function truncateSequence(tensor: ort.Tensor, axis: number, keep: number): ort.Tensor {
  const dims = tensor.dims.slice();
  const current = dims[axis]!;
  if (keep >= current) return tensor;
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const outer = dims.slice(0, axis).reduce((a, b) => a * b, 1);
  const src = tensor.data as Float32Array | Uint16Array | Float64Array;
  const Ctor = src.constructor as new (n: number) => typeof src;
  const out = new Ctor(outer * keep * inner);
  for (let o = 0; o < outer; o++) {
    out.set(src.subarray(o * current * inner, o * current * inner + keep * inner), o * keep * inner);
  }
  dims[axis] = keep;
  return new ort.Tensor(tensor.type, out, dims);
}

/**
 * Rewinds a state to its first `keep` tokens. Only possible when every carried tensor is a sequence (KV) tensor:
 * a recurrent or conv state is a lossy summary of the whole history and cannot be un-applied.
 */
export function truncateState(specs: StateSpec[], state: DecoderState, keep: number): DecoderState {
  if (keep === state.length) return state;
  if (keep > state.length) throw new Error(`cannot extend a state of ${state.length} tokens to ${keep}`);
  const tensors = new Map<string, ort.Tensor>();
  for (const s of specs) {
    if (s.kind !== 'sequence') throw new Error(`state ${s.input} is not rewindable`);
    tensors.set(s.input, truncateSequence(state.tensors.get(s.input)!, s.seqAxis, keep));
  }
  return { tensors, length: keep };
}
