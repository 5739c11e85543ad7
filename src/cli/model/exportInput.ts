/**
 * What `frognano model export` checks in the Hugging Face directory before it starts Python (which would take
 * minutes to load torch and then fail on a missing file): a Qwen3.5 config, complete safetensors weights, the
 * tokenizer and a chat template. Every problem is listed at once, each with what to do.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { setupError } from '../exitCodes.js';

/** The architectures scripts/export_onnx.py traces (the language model of Qwen3.5: FrogNano-4B's). */
export const EXPORTABLE_ARCHITECTURES = ['Qwen3_5ForConditionalGeneration', 'Qwen3_5ForCausalLM'];
const MODEL_TYPES = ['qwen3_5', 'qwen3_5_text'];
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

const ConfigSchema = z.looseObject({
  model_type: z.string().optional(),
  architectures: z.array(z.string()).optional(),
  torch_dtype: z.string().optional(),
  dtype: z.string().optional(),
});
const IndexSchema = z.looseObject({ weight_map: z.record(z.string(), z.string()) });

export interface ExportInput {
  dir: string;
  architecture: string;
  /** Bytes of *.safetensors, and the parameters they hold (by the checkpoint's dtype, bf16 when unsaid). */
  weightBytes: number;
  parameters: number;
  chatTemplate: 'chat_template.jinja' | 'tokenizer_config.json';
}

async function readJson(file: string): Promise<unknown> {
  const info = await stat(file);
  if (info.size > MAX_CONFIG_BYTES) throw new Error('larger than 4 MB');
  return JSON.parse(await readFile(file, 'utf8'));
}

async function checkConfig(dir: string, problems: string[]): Promise<{ architecture: string; bytesPerParam: number }> {
  const fallback = { architecture: '?', bytesPerParam: 2 };
  let config: z.infer<typeof ConfigSchema>;
  try {
    config = ConfigSchema.parse(await readJson(path.join(dir, 'config.json')));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.push(
      code === 'ENOENT'
        ? 'no config.json: not a Hugging Face model directory'
        : `config.json does not parse: ${(err as Error).message.slice(0, 200)}`,
    );
    return fallback;
  }
  const archs = config.architectures ?? [];
  const architecture = archs.find((a) => EXPORTABLE_ARCHITECTURES.includes(a));
  if (!MODEL_TYPES.includes(config.model_type ?? '') || !architecture) {
    problems.push(
      `config.json says model_type ${config.model_type ?? '(none)'}, architectures ${archs.join(', ') || '(none)'}: ` +
        `the exporter handles Qwen3.5 (model_type qwen3_5, ${EXPORTABLE_ARCHITECTURES.join(' or ')}), FrogNano-4B's architecture`,
    );
  }
  const dtype = config.dtype ?? config.torch_dtype ?? 'bfloat16';
  return { architecture: architecture ?? archs[0] ?? '?', bytesPerParam: dtype === 'float32' ? 4 : 2 };
}

/** *.safetensors present, none half-downloaded, and every shard the index names there. */
async function checkWeights(dir: string, names: string[], problems: string[]): Promise<number> {
  const shards = names.filter((n) => n.endsWith('.safetensors'));
  const partial = names.filter((n) => n.endsWith('.incomplete'));
  if (partial.length > 0) {
    problems.push(`${partial.join(', ')}: an unfinished download; run \`frognano model pull --dir ${dir}\` again`);
  }
  if (shards.length === 0) {
    problems.push(`no *.safetensors weights (download them with \`frognano model pull --dir ${dir}\`)`);
    return 0;
  }
  if (names.includes('model.safetensors.index.json')) {
    try {
      const index = IndexSchema.parse(await readJson(path.join(dir, 'model.safetensors.index.json')));
      const missing = [...new Set(Object.values(index.weight_map))].filter((s) => !shards.includes(s));
      if (missing.length > 0) {
        problems.push(
          `model.safetensors.index.json names shards that are not there: ${missing.slice(0, 5).join(', ')}`,
        );
      }
    } catch (err) {
      problems.push(`model.safetensors.index.json does not parse: ${(err as Error).message.slice(0, 200)}`);
    }
  }
  let bytes = 0;
  for (const s of shards) bytes += (await stat(path.join(dir, s))).size;
  return bytes;
}

async function checkTokenizer(dir: string, names: string[], problems: string[]): Promise<ExportInput['chatTemplate']> {
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    if (!names.includes(f)) problems.push(`no ${f} (the tokenizer the onnx backend loads)`);
  }
  if (names.includes('chat_template.jinja')) return 'chat_template.jinja';
  if (names.includes('tokenizer_config.json')) {
    const tc = await readJson(path.join(dir, 'tokenizer_config.json')).catch(() => undefined);
    if (tc && typeof tc === 'object' && 'chat_template' in tc && tc.chat_template) return 'tokenizer_config.json';
  }
  problems.push('no chat template (chat_template.jinja, or chat_template in tokenizer_config.json)');
  return 'chat_template.jinja';
}

/** Checks `dir` as the exporter's input; throws one setup error listing every problem. */
export async function checkExportInput(dir: string): Promise<ExportInput> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw setupError(
      `${dir} is not a directory`,
      'give the Hugging Face model directory (frognano model pull --dir DIR downloads FrogNano-4B there)',
    );
  }
  const names = await readdir(dir);
  const problems: string[] = [];
  const { architecture, bytesPerParam } = await checkConfig(dir, problems);
  const weightBytes = await checkWeights(dir, names, problems);
  const chatTemplate = await checkTokenizer(dir, names, problems);
  if (problems.length > 0) {
    throw setupError(
      `${dir} cannot be exported:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
      'the exporter needs a Qwen3.5 checkpoint in the Hugging Face layout (what `frognano model pull` downloads)',
    );
  }
  return { dir, architecture, weightBytes, parameters: Math.round(weightBytes / bytesPerParam), chatTemplate };
}
