/**
 * Builds a real, tiny ONNX causal language model laid out like a Qwen3.5 text export, so the onnx backend
 * can be tested and benchmarked without downloading weights.
 *
 * The graph has the same interface as the real export: inputs `input_ids`, `attention_mask`, `position_ids`,
 * `past_key_values.N.key/value` for full-attention layers, `past_conv.N` / `past_recurrent.N` for
 * linear-attention layers; outputs `logits`, `present.N.key/value`, `present_conv.N`, `present_recurrent.N`.
 * Layers: token embedding -> [RMSNorm -> mixer (softmax attention with RoPE + KV cache, or a gated linear
 * attention whose causal depthwise conv and recurrent state are carried between calls) -> residual ->
 * RMSNorm -> SiLU MLP -> residual] x N -> RMSNorm -> LM head. Weights come from a seeded PRNG, so the
 * output is gibberish but fully deterministic.
 *
 * Also writes a byte-level BPE `tokenizer.json`, `tokenizer_config.json` with a Qwen3.5-style chat template
 * (tools in the system turn, qwen3_coder XML tool calls, grouped tool responses, `<think>` reasoning),
 * `config.json` and `generation_config.json`.
 *
 * Usage: npx tsx scripts/build-tiny-model.ts <outDir> [--hidden 256] [--layers 4] [--heads 4] [--merges 200]
 *        [--mrope] [--split-embedding] [--external-data]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type TensorProto = InstanceType<typeof onnx.TensorProto>;
type ValueInfoProto = InstanceType<typeof onnx.ValueInfoProto>;
type GraphProto = InstanceType<typeof onnx.GraphProto>;
type AttributeProto = InstanceType<typeof onnx.AttributeProto>;

export type LayerType = 'full_attention' | 'linear_attention';

export interface TinyModelConfig {
  hiddenSize: number;
  intermediateSize: number;
  /** Qwen3.5 interleaves linear-attention layers with a full-attention layer every few layers. */
  layerTypes: LayerType[];
  numAttentionHeads: number;
  headDim: number;
  linearNumHeads: number;
  linearKeyHeadDim: number;
  linearValueHeadDim: number;
  linearConvKernel: number;
  /** Number of BPE merges learned from the built-in corpus (the vocabulary is 256 bytes + merges + specials). */
  numMerges: number;
  /** Qwen3.5 (a VL model) takes position_ids as [3, batch, seq] (M-RoPE); plain text exports take [batch, seq]. */
  mropePositionIds: boolean;
  /**
   * Write the transformers.js multimodal layout instead of one graph: onnx/embed_tokens.onnx (input_ids ->
   * inputs_embeds) and onnx/decoder_model_merged.onnx taking inputs_embeds, as the Qwen3.5 export does.
   */
  splitEmbedding: boolean;
  /**
   * Makes the model say a fixed token sequence: the logits computed at absolute position p >= `startPosition`
   * (which pick the token for position p + 1) get a large bonus for `tokenIds[p - startPosition]`; so
   * `startPosition = promptTokens - 1` scripts the answer to a known prompt. Tests use it to drive real generations that contain
   * tool calls and end-of-turn tokens; the rest of the graph is unchanged.
   */
  script?: { startPosition: number; tokenIds: number[] };
  /** Store the weights in `<graph file>_data` next to the graph, as exports of models over 2 GB must. */
  externalData: boolean;
  /**
   * Pads the embedding and the LM head to this many rows (Qwen3.5's real vocabulary is 248,320), so logits have
   * the real model's size; the extra ids are never produced by the tokenizer. Default: the tokenizer's size.
   */
  vocabSize?: number;
  /** Add a `num_logits_to_keep` input: the graph then computes logits for the last N positions only. */
  logitsToKeep?: boolean;
  seed: number;
}

export const DEFAULT_TINY_CONFIG: TinyModelConfig = {
  hiddenSize: 64,
  intermediateSize: 128,
  layerTypes: ['linear_attention', 'full_attention'],
  numAttentionHeads: 4,
  headDim: 16,
  linearNumHeads: 4,
  linearKeyHeadDim: 16,
  linearValueHeadDim: 16,
  linearConvKernel: 4,
  numMerges: 120,
  mropePositionIds: false,
  splitEmbedding: false,
  externalData: false,
  seed: 1234,
};

export const SPECIAL_TOKENS = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<think>',
  '</think>',
  '<tool_call>',
  '</tool_call>',
  '<tool_response>',
  '</tool_response>',
] as const;

// ---------------------------------------------------------------------------------------------------------
// Deterministic weights

/** mulberry32: tiny, fast, seedable; good enough for weights that only need to be reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------------------
// A minimal ONNX graph writer

const F32 = onnx.TensorProto.DataType.FLOAT;
const I64 = onnx.TensorProto.DataType.INT64;
const BOOL = onnx.TensorProto.DataType.BOOL;

type Dim = number | string;

function valueInfo(name: string, elemType: number, dims?: Dim[]): ValueInfoProto {
  const shape = dims
    ? { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) }
    : undefined;
  return onnx.ValueInfoProto.create({ name, type: { tensorType: { elemType, shape } } });
}

type AttrValue = number | number[] | GraphProto | { float: number };

function attribute(name: string, v: AttrValue): AttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === 'number') return onnx.AttributeProto.create({ name, type: T.INT, i: v });
  if (Array.isArray(v)) return onnx.AttributeProto.create({ name, type: T.INTS, ints: v });
  if ('float' in v) return onnx.AttributeProto.create({ name, type: T.FLOAT, f: v.float });
  return onnx.AttributeProto.create({ name, type: T.GRAPH, g: v });
}

class GraphWriter {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private counter = 0;
  private readonly consts = new Map<string, string>();

  constructor(private readonly prefix = '') {}

  fresh(hint: string): string {
    return `${this.prefix}${hint}_${this.counter++}`;
  }

  /** Adds a node; returns its output names (named `outputs` when given, fresh ones otherwise). */
  op(type: string, inputs: string[], attrs: Record<string, AttrValue> = {}, outputs: number | string[] = 1): string[] {
    const outs = typeof outputs === 'number' ? Array.from({ length: outputs }, () => this.fresh(type)) : outputs;
    this.nodes.push(
      onnx.NodeProto.create({
        opType: type,
        name: this.fresh(`n_${type}`),
        input: inputs,
        output: outs,
        attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
      }),
    );
    return outs;
  }

  /** Single-output shorthand. */
  o(type: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    return this.op(type, inputs, attrs, output ? [output] : 1)[0]!;
  }

  weight(name: string, dims: number[], data: Float32Array): string {
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims,
        dataType: F32,
        rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      }),
    );
    return name;
  }

  i64(values: number[], dims: number[] = [values.length]): string {
    const key = `i64:${dims.join('x')}:${values.join(',')}`;
    const existing = this.consts.get(key);
    if (existing) return existing;
    const name = this.fresh('const_i64');
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.initializers.push(
      onnx.TensorProto.create({ name, dims, dataType: I64, rawData: new Uint8Array(data.buffer) }),
    );
    this.consts.set(key, name);
    return name;
  }

  f32(values: number[], dims: number[] = [values.length]): string {
    const key = `f32:${dims.join('x')}:${values.join(',')}`;
    const existing = this.consts.get(key);
    if (existing) return existing;
    const name = this.weight(this.fresh('const_f32'), dims, Float32Array.from(values));
    this.consts.set(key, name);
    return name;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The model graph

function buildGraph(cfg: TinyModelConfig, vocabSize: number): { decoder: GraphProto; embed?: GraphProto } {
  const g = new GraphWriter();
  const rand = prng(cfg.seed);
  const H = cfg.hiddenSize;
  const D = cfg.headDim;
  const nH = cfg.numAttentionHeads;
  const nL = cfg.linearNumHeads;
  const Dk = cfg.linearKeyHeadDim;
  const Dv = cfg.linearValueHeadDim;
  const K = cfg.linearConvKernel;
  const convDim = 2 * nL * Dk + nL * Dv;
  if (D % 2 !== 0) throw new Error('headDim must be even (RoPE rotates pairs)');

  const uniform = (n: number, scale: number) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) a[i] = (rand() * 2 - 1) * scale;
    return a;
  };
  const linear = (name: string, inDim: number, outDim: number) =>
    g.weight(name, [inDim, outDim], uniform(inDim * outDim, Math.sqrt(3 / inDim)));
  const ones = (name: string, n: number) => g.weight(name, [n], new Float32Array(n).fill(1));

  const tokensInput = cfg.splitEmbedding ? 'inputs_embeds' : 'input_ids';
  const inputs: ValueInfoProto[] = [
    cfg.splitEmbedding
      ? valueInfo('inputs_embeds', F32, ['batch_size', 'sequence_length', H])
      : valueInfo('input_ids', I64, ['batch_size', 'sequence_length']),
    valueInfo('attention_mask', I64, ['batch_size', 'total_sequence_length']),
    valueInfo(
      'position_ids',
      I64,
      cfg.mropePositionIds ? [3, 'batch_size', 'sequence_length'] : ['batch_size', 'sequence_length'],
    ),
  ];
  if (cfg.logitsToKeep) inputs.push(valueInfo('num_logits_to_keep', I64, []));
  const outputs: ValueInfoProto[] = [
    valueInfo('logits', F32, ['batch_size', cfg.logitsToKeep ? 'logits_length' : 'sequence_length', vocabSize]),
  ];

  const rmsNorm = (x: string, weightName: string, dim: number) => {
    const w = ones(weightName, dim);
    const ms = g.o('ReduceMean', [g.o('Mul', [x, x])], { axes: [-1], keepdims: 1 });
    const inv = g.o('Sqrt', [g.o('Add', [ms, g.f32([1e-6], [])])]);
    return g.o('Mul', [g.o('Div', [x, inv]), w]);
  };
  const silu = (x: string) => g.o('Mul', [x, g.o('Sigmoid', [x])]);
  const scalarAt = (shapeOf: string, index: number) =>
    g.o('Gather', [g.o('Shape', [shapeOf]), g.i64([index], [])], { axis: 0 });

  // Embedding.
  const embWeights = uniform(vocabSize * H, 1);
  let x: string;
  let embed: GraphProto | undefined;
  if (cfg.splitEmbedding) {
    x = 'inputs_embeds';
    const e = new GraphWriter();
    e.o('Gather', [e.weight('model.embed_tokens.weight', [vocabSize, H], embWeights), 'input_ids'], { axis: 0 }, 'inputs_embeds');
    embed = onnx.GraphProto.create({
      name: 'tiny_embed_tokens',
      node: e.nodes,
      initializer: e.initializers,
      input: [valueInfo('input_ids', I64, ['batch_size', 'sequence_length'])],
      output: [valueInfo('inputs_embeds', F32, ['batch_size', 'sequence_length', H])],
    });
  } else {
    x = g.o('Gather', [g.weight('model.embed_tokens.weight', [vocabSize, H], embWeights), 'input_ids'], { axis: 0 });
  }

  // RoPE tables from position_ids: [B,1,S,D/2]. M-RoPE exports repeat the text position in all 3 rows.
  const pos = cfg.mropePositionIds ? g.o('Gather', ['position_ids', g.i64([0], [])], { axis: 0 }) : 'position_ids';
  const invFreq = Array.from({ length: D / 2 }, (_, i) => 1 / Math.pow(10000, (2 * i) / D));
  const angles = g.o('Mul', [
    g.o('Unsqueeze', [g.o('Cast', [pos], { to: F32 }), g.i64([1, 3])]),
    g.f32(invFreq, [D / 2]),
  ]);
  const cos = g.o('Cos', [angles]);
  const sin = g.o('Sin', [angles]);

  // Additive attention mask [B,1,S,T]: causal over absolute positions (past length P = T - S) and padding.
  const S = scalarAt(tokensInput, 1);
  const T = scalarAt('attention_mask', 1);
  const zero = g.i64([0], []);
  const one = g.i64([1], []);
  const P = g.o('Sub', [T, S]);
  const keyPos = g.o('Unsqueeze', [g.o('Range', [zero, T, one]), g.i64([0])]); // [1,T]
  const queryPos = g.o('Unsqueeze', [g.o('Add', [g.o('Range', [zero, S, one]), P]), g.i64([1])]); // [S,1]
  const causal = g.o('Not', [g.o('Greater', [keyPos, queryPos])]); // [S,T]
  const padding = g.o('Unsqueeze', [g.o('Cast', ['attention_mask'], { to: BOOL }), g.i64([1, 2])]); // [B,1,1,T]
  const allowed = g.o('And', [causal, padding]);
  const additiveMask = g.o('Where', [allowed, g.f32([0], []), g.f32([-1e9], [])]);

  const rope = (t: string) => {
    const half = D / 2;
    const t1 = g.o('Slice', [t, g.i64([0]), g.i64([half]), g.i64([3])]);
    const t2 = g.o('Slice', [t, g.i64([half]), g.i64([D]), g.i64([3])]);
    const r1 = g.o('Sub', [g.o('Mul', [t1, cos]), g.o('Mul', [t2, sin])]);
    const r2 = g.o('Add', [g.o('Mul', [t1, sin]), g.o('Mul', [t2, cos])]);
    return g.o('Concat', [r1, r2], { axis: 3 });
  };
  const heads = (t: string, n: number, d: number) =>
    g.o('Transpose', [g.o('Reshape', [t, g.i64([0, 0, n, d])])], { perm: [0, 2, 1, 3] });

  cfg.layerTypes.forEach((type, i) => {
    const p = `model.layers.${i}`;
    const h = rmsNorm(x, `${p}.input_layernorm.weight`, H);
    let mixed: string;
    if (type === 'full_attention') {
      const pastK = `past_key_values.${i}.key`;
      const pastV = `past_key_values.${i}.value`;
      const kvDims: Dim[] = ['batch_size', nH, 'past_sequence_length', D];
      const presentDims: Dim[] = ['batch_size', nH, 'total_sequence_length', D];
      inputs.push(valueInfo(pastK, F32, kvDims), valueInfo(pastV, F32, kvDims));
      outputs.push(valueInfo(`present.${i}.key`, F32, presentDims), valueInfo(`present.${i}.value`, F32, presentDims));

      const q = rope(heads(g.o('MatMul', [h, linear(`${p}.self_attn.q_proj.weight`, H, nH * D)]), nH, D));
      const k = rope(heads(g.o('MatMul', [h, linear(`${p}.self_attn.k_proj.weight`, H, nH * D)]), nH, D));
      const v = heads(g.o('MatMul', [h, linear(`${p}.self_attn.v_proj.weight`, H, nH * D)]), nH, D);
      const kAll = g.o('Concat', [pastK, k], { axis: 2 }, `present.${i}.key`);
      const vAll = g.o('Concat', [pastV, v], { axis: 2 }, `present.${i}.value`);
      const scores = g.o('Add', [
        g.o('Mul', [g.o('MatMul', [q, g.o('Transpose', [kAll], { perm: [0, 1, 3, 2] })]), g.f32([1 / Math.sqrt(D)], [])]),
        additiveMask,
      ]);
      const attn = g.o('MatMul', [g.o('Softmax', [scores], { axis: -1 }), vAll]); // [B,nH,S,D]
      const merged = g.o('Reshape', [g.o('Transpose', [attn], { perm: [0, 2, 1, 3] }), g.i64([0, 0, nH * D])]);
      mixed = g.o('MatMul', [merged, linear(`${p}.self_attn.o_proj.weight`, nH * D, H)]);
    } else {
      const pastConv = `past_conv.${i}`;
      const pastRec = `past_recurrent.${i}`;
      inputs.push(
        valueInfo(pastConv, F32, ['batch_size', convDim, K - 1]),
        valueInfo(pastRec, F32, ['batch_size', nL, Dk, Dv]),
      );
      outputs.push(
        valueInfo(`present_conv.${i}`, F32, ['batch_size', convDim, K - 1]),
        valueInfo(`present_recurrent.${i}`, F32, ['batch_size', nL, Dk, Dv]),
      );

      // Causal depthwise conv over [carried K-1 columns | new tokens]; the last K-1 columns are carried on.
      const qkv = g.o('Transpose', [g.o('MatMul', [h, linear(`${p}.linear_attn.in_proj_qkv.weight`, H, convDim)])], {
        perm: [0, 2, 1],
      });
      const window = g.o('Concat', [pastConv, qkv], { axis: 2 });
      g.o('Slice', [window, g.i64([-(K - 1)]), g.i64([Number.MAX_SAFE_INTEGER]), g.i64([2])], {}, `present_conv.${i}`);
      const convW = g.weight(`${p}.linear_attn.conv1d.weight`, [convDim, 1, K], uniform(convDim * K, Math.sqrt(1 / K)));
      const conv = silu(g.o('Conv', [window, convW], { group: convDim, kernel_shape: [K] })); // [B,C,S]
      const act = g.o('Transpose', [conv], { perm: [0, 2, 1] });
      const [qf, kf, vf] = g.op('Split', [act, g.i64([nL * Dk, nL * Dk, nL * Dv])], { axis: 2 }, 3) as [string, string, string];
      const l2norm = (t: string) =>
        g.o('Div', [
          t,
          g.o('Sqrt', [g.o('Add', [g.o('ReduceSum', [g.o('Mul', [t, t]), g.i64([-1])], { keepdims: 1 }), g.f32([1e-6], [])])]),
        ]);
      const q = l2norm(g.o('Reshape', [qf, g.i64([0, 0, nL, Dk])]));
      const k = l2norm(g.o('Reshape', [kf, g.i64([0, 0, nL, Dk])]));
      const v = g.o('Reshape', [vf, g.i64([0, 0, nL, Dv])]);
      // Per-token, per-head forget gate in (0,1).
      const decay = g.o('Sigmoid', [g.o('MatMul', [h, linear(`${p}.linear_attn.in_proj_a.weight`, H, nL)])]); // [B,S,nL]

      // Scan over time: state = decay * state + k^T v ; out = q . state.
      const body = new GraphWriter(`${p}.scan.`);
      const [st, qt, kt, vt, gt] = ['state_in', 'q_t', 'k_t', 'v_t', 'g_t'].map((n) => `${p}.scan.${n}`) as [
        string, string, string, string, string,
      ];
      const outer = (vals: number[]) => g.i64(vals); // outer-scope constants are visible inside the body
      const kv = body.o('Mul', [body.o('Unsqueeze', [kt, outer([3])]), body.o('Unsqueeze', [vt, outer([2])])]);
      const newState = body.o(
        'Add',
        [body.o('Mul', [st, body.o('Unsqueeze', [gt, outer([2, 3])])]), kv],
        {},
        `${p}.scan.state_out`,
      );
      body.o(
        'Squeeze',
        [body.o('MatMul', [body.o('Unsqueeze', [qt, outer([2])]), newState]), outer([2])],
        {},
        `${p}.scan.o_t`,
      );
      const bodyGraph = onnx.GraphProto.create({
        name: `${p}.scan_body`,
        node: body.nodes,
        input: [st, qt, kt, vt, gt].map((n) => valueInfo(n, F32)),
        output: [valueInfo(newState, F32), valueInfo(`${p}.scan.o_t`, F32)],
      });
      const [, o] = g.op(
        'Scan',
        [pastRec, q, k, v, decay],
        { body: bodyGraph, num_scan_inputs: 4, scan_input_axes: [1, 1, 1, 1], scan_output_axes: [1] },
        [`present_recurrent.${i}`, g.fresh('scan_out')],
      ) as [string, string];
      const merged = g.o('Reshape', [o, g.i64([0, 0, nL * Dv])]);
      mixed = g.o('MatMul', [merged, linear(`${p}.linear_attn.out_proj.weight`, nL * Dv, H)]);
    }
    x = g.o('Add', [x, mixed]);
    const h2 = rmsNorm(x, `${p}.post_attention_layernorm.weight`, H);
    const gate = silu(g.o('MatMul', [h2, linear(`${p}.mlp.gate_proj.weight`, H, cfg.intermediateSize)]));
    const up = g.o('MatMul', [h2, linear(`${p}.mlp.up_proj.weight`, H, cfg.intermediateSize)]);
    x = g.o('Add', [x, g.o('MatMul', [g.o('Mul', [gate, up]), linear(`${p}.mlp.down_proj.weight`, cfg.intermediateSize, H)])]);
  });

  let final = rmsNorm(x, 'model.norm.weight', H);
  const lmHead = linear('lm_head.weight', H, vocabSize);
  if (cfg.logitsToKeep) {
    if (cfg.script) throw new Error('logitsToKeep and script cannot be combined');
    // final[:, -n:, :], as transformers' logits_to_keep does.
    const start = g.o('Unsqueeze', [g.o('Neg', ['num_logits_to_keep']), g.i64([0], [1])]);
    final = g.o('Slice', [final, start, g.i64([2 ** 62], [1]), g.i64([1], [1])]);
  }
  if (cfg.script) {
    const { startPosition, tokenIds } = cfg.script;
    const rows = startPosition + tokenIds.length + 1; // the last row (no bonus) covers every later position
    const table = new Float32Array(rows * vocabSize);
    tokenIds.forEach((id, i) => {
      if (id < 0 || id >= vocabSize) throw new Error(`script token ${id} is outside the vocabulary`);
      table[(startPosition + i) * vocabSize + id] = 1000;
    });
    const clamped = g.o('Min', [pos, g.i64([rows - 1], [])]);
    const bonus = g.o('Gather', [g.weight('script.bonus', [rows, vocabSize], table), clamped], { axis: 0 });
    g.o('Add', [g.o('MatMul', [final, lmHead]), bonus], {}, 'logits');
  } else {
    g.o('MatMul', [final, lmHead], {}, 'logits');
  }

  const decoder = onnx.GraphProto.create({
    name: 'tiny_qwen3_5_text',
    node: g.nodes,
    initializer: g.initializers,
    input: inputs,
    output: outputs,
  });
  return { decoder, embed };
}

// ---------------------------------------------------------------------------------------------------------
// Byte-level BPE tokenizer

/** GPT-2 byte <-> unicode table: printable bytes map to themselves, the rest to U+0100 onwards. */
function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return table;
}

/** Text the merges are learned from: what this model will mostly see (chat markup, tool calls, code). */
const MERGE_CORPUS = `
You are a software engineering agent working in a checked out repository. Inspect the files, make focused edits,
run the tests, then answer briefly. The user asked to fix the failing test in the function that parses the config.
<tool_call>
<function=Read>
<parameter=file_path>
src/index.ts
</parameter>
</function>
</tool_call>
<tool_response>
import { readFile } from 'node:fs/promises';
export function parse(text: string): number { return text.length; }
const result = await run(command, { timeout: 120 });
</tool_response>
function return const let import export from async await if else for while true false null undefined string number
the and to of in is that for with this on as be are it by or not
`;

function learnMerges(byteTable: string[], numMerges: number): string[] {
  const encoder = new TextEncoder();
  const words = MERGE_CORPUS.match(/ ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+/g) ?? [];
  let seqs = words.map((w) => Array.from(encoder.encode(w), (b) => byteTable[b]!));
  const merges: string[] = [];
  for (let m = 0; m < numMerges; m++) {
    const counts = new Map<string, number>();
    for (const s of seqs) {
      for (let i = 0; i + 1 < s.length; i++) {
        const key = `${s[i]} ${s[i + 1]}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    let best: string | undefined;
    let bestCount = 1;
    for (const [key, c] of counts) {
      // Ties broken lexicographically so the vocabulary is identical on every run.
      if (c > bestCount || (c === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (!best) break;
    merges.push(best);
    const [a, b] = best.split(' ') as [string, string];
    seqs = seqs.map((s) => {
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(s[i]!);
      }
      return out;
    });
  }
  return merges;
}

interface TokenizerFiles {
  tokenizer: object;
  specialIds: Record<(typeof SPECIAL_TOKENS)[number], number>;
  vocabSize: number;
}

function buildTokenizer(numMerges: number): TokenizerFiles {
  const byteTable = bytesToUnicode();
  const vocab: Record<string, number> = {};
  const sortedBytes = [...byteTable].sort();
  for (const ch of sortedBytes) vocab[ch] = Object.keys(vocab).length;
  const merges = learnMerges(byteTable, numMerges);
  for (const m of merges) {
    const tok = m.replace(' ', '');
    if (!(tok in vocab)) vocab[tok] = Object.keys(vocab).length;
  }
  let next = Object.keys(vocab).length;
  const specialIds = {} as TokenizerFiles['specialIds'];
  const addedTokens = SPECIAL_TOKENS.map((content) => {
    const id = next++;
    specialIds[content] = id;
    // As in Qwen: only the turn/document markers are "special" (skipped when decoding with skip_special_tokens).
    const special = content === '<|endoftext|>' || content === '<|im_start|>' || content === '<|im_end|>';
    return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true };
  return {
    specialIds,
    vocabSize: next,
    tokenizer: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: { type: 'NFC' },
      pre_tokenizer: byteLevel,
      post_processor: { ...byteLevel, use_regex: false },
      decoder: { ...byteLevel, use_regex: false },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: '',
        end_of_word_suffix: '',
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Chat template: Qwen3.5 conventions (tools described in the system turn, qwen3_coder XML calls, tool
// responses grouped in one user turn, reasoning kept for the turns after the last real user query).

export const CHAT_TEMPLATE = String.raw`{%- macro render_value(v) -%}
{%- if v is string -%}{{- v -}}{%- else -%}{{- v | tojson -}}{%- endif -%}
{%- endmacro -%}
{%- set ns = namespace(last_query=-1, system='') -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- if messages and messages[0].role == 'system' -%}{%- set ns.system = messages[0].content -%}{%- endif -%}
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if ns.system -%}{{- ns.system | trim + '\n\n' -}}{%- endif -%}
{{- '# Tools\n\nYou have access to the following functions:\n\n<tools>' -}}
{%- for tool in tools -%}
{%- if tool.function is defined -%}{%- set fn = tool.function -%}{%- else -%}{%- set fn = tool -%}{%- endif -%}
{{- '\n<function>\n<name>' + fn.name + '</name>' -}}
{%- if fn.description -%}{{- '\n<description>' + fn.description | trim + '</description>' -}}{%- endif -%}
{{- '\n<parameters>' -}}
{%- if fn.parameters is defined and fn.parameters.properties is defined -%}
{%- for pname, p in fn.parameters.properties | items -%}
{{- '\n<parameter>\n<name>' + pname + '</name>' -}}
{%- if p.type is defined -%}{{- '\n<type>' + render_value(p.type) + '</type>' -}}{%- endif -%}
{%- if p.description is defined -%}{{- '\n<description>' + p.description | trim + '</description>' -}}{%- endif -%}
{%- if p.enum is defined -%}{{- '\n<enum>' + p.enum | tojson + '</enum>' -}}{%- endif -%}
{{- '\n</parameter>' -}}
{%- endfor -%}
{%- endif -%}
{%- if fn.parameters is defined and fn.parameters.required is defined -%}
{{- '\n<required>' + fn.parameters.required | tojson + '</required>' -}}
{%- endif -%}
{{- '\n</parameters>\n</function>' -}}
{%- endfor -%}
{{- '\n</tools>\n\nTo call a function, reply with exactly this format and nothing after it:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call>\n\nRules:\n- Every required parameter must be given.\n- Reasoning, if any, goes BEFORE the function call, never after it.\n- Without a suitable function, answer normally.<|im_end|>\n' -}}
{%- elif ns.system -%}
{{- '<|im_start|>system\n' + ns.system + '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'system' -%}
{%- if not loop.first -%}{{- '<|im_start|>system\n' + m.content + '<|im_end|>\n' -}}{%- endif -%}
{%- elif m.role == 'user' -%}
{{- '<|im_start|>user\n' + m.content + '<|im_end|>\n' -}}
{%- elif m.role == 'assistant' -%}
{%- if m.reasoning is defined and m.reasoning is not none -%}{%- set reasoning = m.reasoning -%}
{%- elif m.reasoning_content is defined and m.reasoning_content is not none -%}{%- set reasoning = m.reasoning_content -%}
{%- else -%}{%- set reasoning = '' -%}{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if loop.index0 > ns.last_query -%}
{{- '<think>\n' + reasoning | trim + '\n</think>\n\n' -}}
{%- endif -%}
{{- m.content | trim -}}
{%- if m.tool_calls is defined and m.tool_calls -%}
{%- for call in m.tool_calls -%}
{%- if call.function is defined -%}{%- set tc = call.function -%}{%- else -%}{%- set tc = call -%}{%- endif -%}
{%- if loop.first and m.content | trim -%}{{- '\n\n' -}}{%- elif not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n<function=' + tc.name + '>\n' -}}
{%- if tc.arguments is mapping -%}
{%- for key, value in tc.arguments | items -%}
{{- '<parameter=' + key + '>\n' + render_value(value) + '\n</parameter>\n' -}}
{%- endfor -%}
{%- elif tc.arguments -%}
{{- tc.arguments + '\n' -}}
{%- endif -%}
{{- '</function>\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + m.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}
{{- '<think>\n' -}}
{%- endif -%}
{%- endif -%}`;

// ---------------------------------------------------------------------------------------------------------

export function resolveConfig(overrides: Partial<TinyModelConfig> = {}): TinyModelConfig {
  return { ...DEFAULT_TINY_CONFIG, ...overrides };
}

/**
 * Writes model.onnx (or onnx/embed_tokens.onnx + onnx/decoder_model_merged.onnx), tokenizer.json,
 * tokenizer_config.json, config.json and generation_config.json to outDir.
 */
export async function buildTinyModel(outDir: string, overrides: Partial<TinyModelConfig> = {}): Promise<void> {
  const cfg = resolveConfig(overrides);
  const tok = buildTokenizer(cfg.numMerges);
  const vocabSize = Math.max(tok.vocabSize, cfg.vocabSize ?? 0);
  const graphs = buildGraph(cfg, vocabSize);
  /** Serializes a graph to `file`; with externalData, weights go to `<file>_data` (onnx external-data format). */
  const writeModel = async (file: string, graph: GraphProto) => {
    const chunks: Uint8Array[] = [];
    if (cfg.externalData) {
      const location = `${path.basename(file)}_data`;
      let offset = 0;
      for (const t of graph.initializer) {
        if (!t.rawData || t.rawData.length < 1024) continue; // small constants stay inline, as exporters do
        const length = t.rawData.length;
        chunks.push(t.rawData);
        t.externalData = [
          { key: 'location', value: location },
          { key: 'offset', value: String(offset) },
          { key: 'length', value: String(length) },
        ];
        t.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
        t.rawData = new Uint8Array(0);
        offset += length;
      }
      await writeFile(`${file}_data`, Buffer.concat(chunks));
    }
    const bytes = onnx.ModelProto.encode(
      onnx.ModelProto.create({
        irVersion: 7,
        opsetImport: [{ domain: '', version: 14 }],
        producerName: 'frognano-bot scripts/build-tiny-model.ts',
        graph,
      }),
    ).finish();
    await writeFile(file, bytes);
  };

  const imEnd = tok.specialIds['<|im_end|>'];
  const eot = tok.specialIds['<|endoftext|>'];
  const config = {
    architectures: ['Qwen3_5ForCausalLM'],
    model_type: 'qwen3_5_text',
    vocab_size: vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.layerTypes.length,
    layer_types: cfg.layerTypes,
    num_attention_heads: cfg.numAttentionHeads,
    num_key_value_heads: cfg.numAttentionHeads,
    head_dim: cfg.headDim,
    linear_num_key_heads: cfg.linearNumHeads,
    linear_num_value_heads: cfg.linearNumHeads,
    linear_key_head_dim: cfg.linearKeyHeadDim,
    linear_value_head_dim: cfg.linearValueHeadDim,
    linear_conv_kernel_dim: cfg.linearConvKernel,
    // The tiny export carries kernel-1 conv columns (the real export may carry `kernel`; the backend reads
    // the state shape from the model's input metadata, not from here).
    max_position_embeddings: 131072,
    rope_theta: 10000,
    bos_token_id: null,
    eos_token_id: imEnd,
    pad_token_id: eot,
    tie_word_embeddings: false,
    torch_dtype: 'float32',
    frognano_tiny: { seed: cfg.seed, mrope_position_ids: cfg.mropePositionIds },
  };
  const generationConfig = { eos_token_id: [imEnd, eot], pad_token_id: eot, bos_token_id: null };
  const addedTokensDecoder = Object.fromEntries(
    (tok.tokenizer as { added_tokens: { id: number }[] }).added_tokens.map((t) => [String(t.id), t]),
  );
  const tokenizerConfig = {
    tokenizer_class: 'Qwen2Tokenizer',
    model_max_length: 131072,
    bos_token: null,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    add_bos_token: false,
    add_prefix_space: false,
    clean_up_tokenization_spaces: false,
    errors: 'replace',
    split_special_tokens: false,
    added_tokens_decoder: addedTokensDecoder,
    chat_template: CHAT_TEMPLATE,
  };

  await mkdir(outDir, { recursive: true });
  if (graphs.embed) {
    await mkdir(path.join(outDir, 'onnx'), { recursive: true });
    await writeModel(path.join(outDir, 'onnx', 'embed_tokens.onnx'), graphs.embed);
    await writeModel(path.join(outDir, 'onnx', 'decoder_model_merged.onnx'), graphs.decoder);
  } else {
    await writeModel(path.join(outDir, 'model.onnx'), graphs.decoder);
  }
  await Promise.all([
    writeFile(path.join(outDir, 'tokenizer.json'), JSON.stringify(tok.tokenizer)),
    writeFile(path.join(outDir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2)),
    writeFile(path.join(outDir, 'config.json'), JSON.stringify(config, null, 2)),
    writeFile(path.join(outDir, 'generation_config.json'), JSON.stringify(generationConfig, null, 2)),
  ]);
}

function parseCliArgs(argv: string[]): { outDir: string; overrides: Partial<TinyModelConfig> } {
  const [outDir, ...rest] = argv;
  if (!outDir || outDir.startsWith('--')) {
    throw new Error('usage: build-tiny-model.ts <outDir> [--hidden N] [--layers N] [--heads N] [--merges N] [--mrope] [--split-embedding] [--external-data]');
  }
  const overrides: Partial<TinyModelConfig> = {};
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const num = () => {
      const v = Number(rest[++i]);
      if (!Number.isInteger(v) || v <= 0) throw new Error(`${flag} needs a positive integer`);
      return v;
    };
    switch (flag) {
      case '--hidden': {
        const h = num();
        overrides.hiddenSize = h;
        overrides.intermediateSize = 2 * h;
        break;
      }
      case '--layers': {
        // Qwen3.5 pattern: three linear-attention layers, then one full-attention layer.
        const n = num();
        overrides.layerTypes = Array.from({ length: n }, (_, j) => (j % 4 === 3 || n === 1 ? 'full_attention' : 'linear_attention'));
        break;
      }
      case '--heads': {
        const n = num();
        overrides.numAttentionHeads = n;
        overrides.linearNumHeads = n;
        break;
      }
      case '--merges':
        overrides.numMerges = num();
        break;
      case '--mrope':
        overrides.mropePositionIds = true;
        break;
      case '--split-embedding':
        overrides.splitEmbedding = true;
        break;
      case '--external-data':
        overrides.externalData = true;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  if (overrides.hiddenSize) {
    const heads = overrides.numAttentionHeads ?? DEFAULT_TINY_CONFIG.numAttentionHeads;
    const d = overrides.hiddenSize / heads;
    if (!Number.isInteger(d) || d % 2) throw new Error('--hidden must be divisible by --heads into an even head size');
    overrides.headDim = d;
    overrides.linearKeyHeadDim = d;
    overrides.linearValueHeadDim = d;
  }
  return { outDir, overrides };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const { outDir, overrides } = parseCliArgs(process.argv.slice(2));
    await buildTinyModel(outDir, overrides);
    console.log(`tiny model written to ${path.resolve(outDir)}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
