/**
 * Finds the files of a local ONNX model directory and says clearly what is missing.
 *
 * Two layouts are accepted, as produced by the usual exporters:
 *   <dir>/model.onnx (+ model.onnx_data external weights)                  optimum / onnxruntime-genai style
 *   <dir>/onnx/model.onnx or <dir>/onnx/decoder_model_merged.onnx          Hugging Face hub style (transformers.js)
 *     (+ onnx/embed_tokens.onnx when the decoder takes inputs_embeds, as the Qwen3.5 transformers.js export does)
 * Hub exports ship weight-type variants side by side (`decoder_model_merged_fp16.onnx`, `_q4`, `_q4f16`, with
 * matching `embed_tokens_*.onnx`): a dtype picks the decoder and the embed file that belong together.
 * Tokenizer and configs sit at the top: tokenizer.json, tokenizer_config.json, config.json, optionally
 * generation_config.json; the chat template is chat_template.jinja (transformers 5) or tokenizer_config.json's.
 * External weight files (`*.onnx_data`) are found by onnxruntime itself next to the graph file.
 */
import { access, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ModelError } from '../types.js';

export interface ModelFiles {
  dir: string;
  decoderPath: string;
  /** Separate token-embedding graph, when the decoder takes `inputs_embeds`. */
  embedPath?: string;
  /** The weight type picked: from the decoder file's suffix (`_fp16`, `_q4`, ...), fp32 when it has none. */
  dtype: string;
  /** Every ONNX graph in the directory, relative to it (for reports and error messages). */
  graphs: string[];
  chatTemplate: ChatTemplateSource;
  config: ModelConfig;
  generationConfig: GenerationConfig;
}

/** Where the chat template comes from: transformers 5 saves `chat_template.jinja`, older exports keep it inline. */
export interface ChatTemplateSource {
  file: 'chat_template.jinja' | 'tokenizer_config.json';
  /** The template text; undefined for tokenizer_config.json, which the tokenizer reads itself. */
  text?: string;
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

/** Decoder graph names in order of preference, in the directory itself or in `onnx/` (the hub layout). */
const DECODER_BASES = ['model', 'decoder_model_merged'];
const GRAPH_DIRS = ['', 'onnx'];
const DECODER_CANDIDATES = GRAPH_DIRS.flatMap((d) => DECODER_BASES.map((b) => path.posix.join(d, `${b}.onnx`)));

/**
 * Weight types as transformers.js names them, and the file suffix each one has in a hub export
 * (`decoder_model_merged_q4.onnx`, `embed_tokens_q4.onnx`).
 */
export const ONNX_DTYPES: Record<string, string> = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};
const SUFFIX_TO_DTYPE = new Map(Object.entries(ONNX_DTYPES).map(([dtype, suffix]) => [suffix, dtype]));

interface Graph {
  /** Path relative to the model directory, `/`-separated. */
  rel: string;
  kind: 'decoder' | 'embed';
  /** Base name without suffix, e.g. `decoder_model_merged`. */
  base: string;
  suffix: string;
}

/** `decoder_model_merged_q4.onnx` -> decoder, suffix `_q4`; graphs that are neither (vision encoders...) are skipped. */
function classify(dir: string, name: string): Graph | undefined {
  const m = /^(model|decoder_model_merged|embed_tokens)(_[a-z0-9]+)?\.onnx$/.exec(name);
  if (!m) return undefined;
  const suffix = m[2] ?? '';
  if (!SUFFIX_TO_DTYPE.has(suffix)) return undefined;
  return { rel: path.posix.join(dir, name), kind: m[1] === 'embed_tokens' ? 'embed' : 'decoder', base: m[1]!, suffix };
}

async function listGraphs(root: string): Promise<{ graphs: Graph[]; all: string[] }> {
  const graphs: Graph[] = [];
  const all: string[] = [];
  for (const d of GRAPH_DIRS) {
    let names: string[];
    try {
      names = await readdir(path.join(root, d));
    } catch {
      continue;
    }
    for (const name of names.sort()) {
      if (!name.endsWith('.onnx')) continue;
      all.push(path.posix.join(d, name));
      const g = classify(d, name);
      if (g) graphs.push(g);
    }
  }
  return { graphs, all };
}

const dtypeOf = (suffix: string): string => SUFFIX_TO_DTYPE.get(suffix) ?? 'fp32';

/** The decoder for `dtype` (or, with none asked, fp32 or the only variant there is), explained when missing. */
function pickDecoder(dir: string, graphs: Graph[], all: string[], dtype?: string): Graph {
  const decoders = graphs
    .filter((g) => g.kind === 'decoder')
    .sort(
      (a, b) =>
        DECODER_CANDIDATES.indexOf(a.rel.replace(a.suffix, '')) -
        DECODER_CANDIDATES.indexOf(b.rel.replace(b.suffix, '')),
    );
  const variants = [...new Set(decoders.map((g) => dtypeOf(g.suffix)))];
  const holds = all.length ? `it holds ${all.join(', ')}` : 'it holds no .onnx file';
  const settings =
    'the dtype setting (FROGNANO_ONNX_DTYPE) picks a variant, the model file setting (FROGNANO_ONNX_MODEL_FILE) a graph';
  if (dtype !== undefined) {
    const suffix = ONNX_DTYPES[dtype];
    if (suffix === undefined) {
      throw new ModelError(`unknown ONNX dtype "${dtype}": use one of ${Object.keys(ONNX_DTYPES).join(', ')}`);
    }
    const hit = decoders.find((g) => g.suffix === suffix);
    if (!hit) {
      throw new ModelError(
        `no ${dtype} decoder graph in ${dir} (looked for ${DECODER_CANDIDATES.map((c) => c.replace('.onnx', `${suffix}.onnx`)).join(', ')}); ` +
          `${holds}${variants.length ? `; available dtypes: ${variants.join(', ')}` : ''}`,
      );
    }
    return hit;
  }
  const plain = decoders.find((g) => g.suffix === '');
  if (plain) return plain;
  if (variants.length === 1) return decoders[0]!;
  if (variants.length > 1) {
    throw new ModelError(
      `no float32 ONNX graph in ${dir} and several variants to choose from (${variants.join(', ')}): ${holds}; ${settings}`,
    );
  }
  throw new ModelError(
    `no ONNX graph in ${dir}: expected one of ${DECODER_CANDIDATES.join(', ')} (or a dtype variant such as onnx/decoder_model_merged_q4.onnx); ${holds}; ${settings}`,
  );
}

/** The embedding graph that belongs to the decoder: same suffix first, then float32, then any. */
function pickEmbed(graphs: Graph[], decoder: Graph): Graph | undefined {
  const embeds = graphs.filter((g) => g.kind === 'embed');
  const decoderDir = path.posix.dirname(decoder.rel);
  const near = (g: Graph) => path.posix.dirname(g.rel) === decoderDir;
  return (
    embeds.find((g) => near(g) && g.suffix === decoder.suffix) ??
    embeds.find((g) => g.suffix === decoder.suffix) ??
    embeds.find((g) => near(g) && g.suffix === '') ??
    embeds.find((g) => g.suffix === '') ??
    embeds[0]
  );
}

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

async function readChatTemplate(dir: string): Promise<ChatTemplateSource> {
  // transformers 5 writes the template to its own file, which takes priority over tokenizer_config.json (as there).
  try {
    const text = await readFile(path.join(dir, 'chat_template.jinja'), 'utf8');
    if (text.trim()) return { file: 'chat_template.jinja', text };
  } catch {
    // not there: fall back to the tokenizer config
  }
  const tokenizerConfig = await readJson<{ chat_template?: unknown }>(path.join(dir, 'tokenizer_config.json'), true);
  const inline = tokenizerConfig?.chat_template;
  if ((typeof inline === 'string' && inline.trim()) || (Array.isArray(inline) && inline.length))
    return { file: 'tokenizer_config.json' };
  throw new ModelError(
    `model directory ${dir} has no chat template: looked for chat_template.jinja and the chat_template entry of tokenizer_config.json`,
  );
}

export interface LocateOptions {
  /**
   * Graph file relative to the directory, for exports with several variants
   * (e.g. `onnx/decoder_model_merged_q4f16.onnx`); its suffix picks the matching embed file.
   */
  modelFile?: string;
  /** Weight type (`fp32`, `fp16`, `q4`, `q4f16`, `q8`, ...): picks `<decoder><suffix>.onnx` and its embed file. */
  dtype?: string;
}

export async function locateModelFiles(modelDir: string, opts: LocateOptions | string = {}): Promise<ModelFiles> {
  const { modelFile, dtype } = typeof opts === 'string' ? { modelFile: opts, dtype: undefined } : opts;
  const dir = path.resolve(modelDir);
  if (!(await exists(dir))) throw new ModelError(`model directory ${dir} does not exist`);

  const { graphs, all } = await listGraphs(dir);
  let decoder: Graph;
  if (modelFile) {
    const decoderPath = path.resolve(dir, modelFile);
    if (!(await exists(decoderPath))) {
      throw new ModelError(
        `model file ${decoderPath} does not exist; ${all.length ? `the directory holds ${all.join(', ')}` : 'the directory holds no .onnx file'}`,
      );
    }
    const rel = path.relative(dir, decoderPath).split(path.sep).join('/');
    const known = classify(path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel), path.basename(rel));
    decoder = known ?? { rel, kind: 'decoder', base: path.basename(rel, '.onnx'), suffix: '' };
    if (dtype !== undefined && known && dtypeOf(known.suffix) !== dtype) {
      throw new ModelError(
        `the model file ${rel} is ${dtypeOf(known.suffix)}, but dtype ${dtype} was asked for: set one of the two`,
      );
    }
  } else {
    decoder = pickDecoder(dir, graphs, all, dtype);
  }
  for (const required of ['tokenizer.json', 'tokenizer_config.json']) {
    if (!(await exists(path.join(dir, required)))) {
      throw new ModelError(`model directory ${dir} is missing ${required} (the tokenizer and its settings live there)`);
    }
  }
  const embed = pickEmbed(graphs, decoder);
  const chatTemplate = await readChatTemplate(dir);
  const rawConfig = (await readJson<ModelConfig>(path.join(dir, 'config.json'), true))!;
  // Multimodal configs nest the language model; the text part is what decoding needs.
  const config: ModelConfig = rawConfig.text_config
    ? { ...rawConfig.text_config, eos_token_id: rawConfig.text_config.eos_token_id ?? rawConfig.eos_token_id }
    : rawConfig;
  const generationConfig = (await readJson<GenerationConfig>(path.join(dir, 'generation_config.json'), false)) ?? {};
  return {
    dir,
    decoderPath: path.join(dir, decoder.rel),
    embedPath: embed ? path.join(dir, embed.rel) : undefined,
    dtype: dtypeOf(decoder.suffix),
    graphs: all,
    chatTemplate,
    config,
    generationConfig,
  };
}
