/**
 * Finds the files of a local ONNX model directory and says clearly what is missing.
 *
 * Two layouts are accepted, as produced by the usual exporters:
 *   <dir>/model.onnx (+ model.onnx_data external weights)                  optimum / onnxruntime-genai style
 *   <dir>/onnx/model.onnx or <dir>/onnx/decoder_model_merged.onnx          Hugging Face hub style (transformers.js)
 *     (+ onnx/embed_tokens.onnx when the decoder takes inputs_embeds, as the Qwen3.5 transformers.js export does)
 * Tokenizer and configs always sit at the top: tokenizer.json, tokenizer_config.json (chat template),
 * config.json, and optionally generation_config.json.
 * External weight files (`*.onnx_data`) are found by onnxruntime itself next to the graph file.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ModelError } from '../types.js';

export interface ModelFiles {
  dir: string;
  decoderPath: string;
  /** Separate token-embedding graph, when the decoder takes `inputs_embeds`. */
  embedPath?: string;
  config: ModelConfig;
  generationConfig: GenerationConfig;
}

/** The parts of config.json the backend reads; everything is optional because exporters differ. */
export interface ModelConfig {
  model_type?: string;
  _name_or_path?: string;
  max_position_embeddings?: number;
  num_key_value_heads?: number;
  num_attention_heads?: number;
  hidden_size?: number;
  head_dim?: number;
  layer_types?: string[];
  linear_conv_kernel_dim?: number;
  linear_key_head_dim?: number;
  linear_value_head_dim?: number;
  linear_num_key_heads?: number;
  linear_num_value_heads?: number;
  eos_token_id?: number | number[] | null;
  /** Multimodal exports (Qwen3.5 is one) keep the language model's settings here. */
  text_config?: ModelConfig;
  [key: string]: unknown;
}

export interface GenerationConfig {
  eos_token_id?: number | number[] | null;
  [key: string]: unknown;
}

const DECODER_CANDIDATES = [
  'model.onnx',
  'decoder_model_merged.onnx',
  'onnx/model.onnx',
  'onnx/decoder_model_merged.onnx',
];
const EMBED_CANDIDATES = ['embed_tokens.onnx', 'onnx/embed_tokens.onnx'];

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

async function readJson<T>(file: string, required: boolean): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    if (required) throw new ModelError(`model directory is missing ${path.basename(file)} (looked for ${file})`);
    return undefined;
  }
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new ModelError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * @param modelFile graph file relative to the directory, for exports with several variants
 *   (e.g. `onnx/decoder_model_merged_q4f16.onnx`); default: the first of DECODER_CANDIDATES present.
 */
export async function locateModelFiles(modelDir: string, modelFile?: string): Promise<ModelFiles> {
  const dir = path.resolve(modelDir);
  if (!(await exists(dir))) throw new ModelError(`model directory ${dir} does not exist`);

  let decoderPath: string | undefined;
  if (modelFile) {
    decoderPath = path.resolve(dir, modelFile);
    if (!(await exists(decoderPath))) throw new ModelError(`model file ${decoderPath} does not exist`);
  } else {
    for (const candidate of DECODER_CANDIDATES) {
      if (await exists(path.join(dir, candidate))) {
        decoderPath = path.join(dir, candidate);
        break;
      }
    }
  }
  if (!decoderPath) {
    throw new ModelError(
      `no ONNX graph in ${dir}: expected one of ${DECODER_CANDIDATES.join(', ')} (or pass modelFile)`,
    );
  }
  for (const required of ['tokenizer.json', 'tokenizer_config.json']) {
    if (!(await exists(path.join(dir, required)))) {
      throw new ModelError(`model directory ${dir} is missing ${required} (the tokenizer and chat template live there)`);
    }
  }
  let embedPath: string | undefined;
  for (const candidate of EMBED_CANDIDATES) {
    const p = path.join(dir, candidate);
    if (await exists(p)) {
      embedPath = p;
      break;
    }
  }
  const rawConfig = (await readJson<ModelConfig>(path.join(dir, 'config.json'), true))!;
  // Multimodal configs nest the language model; the text part is what decoding needs.
  const config: ModelConfig = rawConfig.text_config
    ? { ...rawConfig.text_config, eos_token_id: rawConfig.text_config.eos_token_id ?? rawConfig.eos_token_id }
    : rawConfig;
  const generationConfig = (await readJson<GenerationConfig>(path.join(dir, 'generation_config.json'), false)) ?? {};
  return { dir, decoderPath, embedPath, config, generationConfig };
}
