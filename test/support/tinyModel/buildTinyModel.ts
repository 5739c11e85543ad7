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
 * Tests and benchmarks import `buildTinyModel`; `npx tsx test/support/tinyModel/cli.ts <outDir>` writes one from the
 * command line. Modules: config.ts (shape and defaults), onnxWriter.ts + graph.ts (the ONNX graph), tokenizer.ts
 * (byte-level BPE), chatTemplate.ts.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CHAT_TEMPLATE } from './chatTemplate.js';
import { DEFAULT_TINY_CONFIG, type TinyModelConfig } from './config.js';
import { buildGraph } from './graph.js';
import { onnx, type GraphProto } from './onnxWriter.js';
import { buildTokenizer } from './tokenizer.js';

export { DEFAULT_TINY_CONFIG, SPECIAL_TOKENS, type LayerType, type TinyModelConfig } from './config.js';

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
        producerName: 'frognano-bot test/support/tinyModel',
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
