/**
 * The tiny model's graph: token embedding -> [RMSNorm -> mixer (softmax attention with RoPE + KV cache, or a gated
 * linear attention whose causal depthwise conv and recurrent state are carried between calls) -> residual ->
 * RMSNorm -> SiLU MLP -> residual] x N -> RMSNorm -> LM head, with the Qwen3.5 export's inputs and outputs.
 */
import type { TinyModelConfig } from './config.js';
import {
  BOOL,
  F32,
  GraphWriter,
  I64,
  onnx,
  prng,
  valueInfo,
  type Dim,
  type GraphProto,
  type ValueInfoProto,
} from './onnxWriter.js';

export function buildGraph(cfg: TinyModelConfig, vocabSize: number): { decoder: GraphProto; embed?: GraphProto } {
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
    e.o(
      'Gather',
      [e.weight('model.embed_tokens.weight', [vocabSize, H], embWeights), 'input_ids'],
      { axis: 0 },
      'inputs_embeds',
    );
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
        g.o('Mul', [
          g.o('MatMul', [q, g.o('Transpose', [kAll], { perm: [0, 1, 3, 2] })]),
          g.f32([1 / Math.sqrt(D)], []),
        ]),
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
      const [qf, kf, vf] = g.op('Split', [act, g.i64([nL * Dk, nL * Dk, nL * Dv])], { axis: 2 }, 3) as [
        string,
        string,
        string,
      ];
      const l2norm = (t: string) =>
        g.o('Div', [
          t,
          g.o('Sqrt', [
            g.o('Add', [g.o('ReduceSum', [g.o('Mul', [t, t]), g.i64([-1])], { keepdims: 1 }), g.f32([1e-6], [])]),
          ]),
        ]);
      const q = l2norm(g.o('Reshape', [qf, g.i64([0, 0, nL, Dk])]));
      const k = l2norm(g.o('Reshape', [kf, g.i64([0, 0, nL, Dk])]));
      const v = g.o('Reshape', [vf, g.i64([0, 0, nL, Dv])]);
      // Per-token, per-head forget gate in (0,1).
      const decay = g.o('Sigmoid', [g.o('MatMul', [h, linear(`${p}.linear_attn.in_proj_a.weight`, H, nL)])]); // [B,S,nL]

      // Scan over time: state = decay * state + k^T v ; out = q . state.
      const body = new GraphWriter(`${p}.scan.`);
      const [st, qt, kt, vt, gt] = ['state_in', 'q_t', 'k_t', 'v_t', 'g_t'].map((n) => `${p}.scan.${n}`) as [
        string,
        string,
        string,
        string,
        string,
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
    x = g.o('Add', [
      x,
      g.o('MatMul', [g.o('Mul', [gate, up]), linear(`${p}.mlp.down_proj.weight`, cfg.intermediateSize, H)]),
    ]);
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
