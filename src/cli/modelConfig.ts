import { stat } from 'node:fs/promises';
import path from 'node:path';
import { BackendConfigSchema, backendConfigFromEnv, type BackendConfig } from '../inference/index.js';
import { setupError, UsageError } from './exitCodes.js';

/** Any of these set means the environment configures a model (C2's backendConfigFromEnv reads them). */
const ENV_SOURCES = ['FROGNANO_BACKEND', 'FROGNANO_MODEL_DIR', 'FROGNANO_OPENAI_BASE_URL', 'FROGNANO_REPLAY_FILE'];

export interface ModelFlags {
  'model-dir'?: string;
  endpoint?: string;
  model?: string;
  replay?: string;
}

/**
 * The model backend to use: from --model-dir / --endpoint + --model / --replay, else from the environment
 * (the same variables the runner reads). Returns undefined when nothing is configured at all.
 */
export function backendConfigFromFlags(
  flags: ModelFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
  command: string,
): BackendConfig | undefined {
  const given = (['model-dir', 'endpoint', 'replay'] as const).filter((k) => flags[k] !== undefined);
  if (given.length > 1)
    throw new UsageError(`choose one model: ${given.map((g) => `--${g}`).join(' and ')} were both given.`, command);
  if (flags.model !== undefined && flags.endpoint === undefined) {
    throw new UsageError('--model names the model on an --endpoint; give --endpoint URL too.', command);
  }
  let input: unknown;
  if (flags['model-dir'] !== undefined) input = { kind: 'onnx', modelDir: path.resolve(cwd, flags['model-dir']) };
  else if (flags.replay !== undefined) input = { kind: 'replay', file: path.resolve(cwd, flags.replay) };
  else if (flags.endpoint !== undefined) {
    if (!flags.model)
      throw new UsageError('--endpoint needs --model NAME (the model name the server serves).', command);
    // The key stays in the environment (never on the command line, where `ps` would show it).
    input = {
      kind: 'openai',
      baseUrl: flags.endpoint,
      model: flags.model,
      apiKey: env.FROGNANO_OPENAI_API_KEY?.trim() || undefined,
    };
  } else {
    if (!ENV_SOURCES.some((name) => env[name]?.trim())) return undefined;
    try {
      return backendConfigFromEnv(env);
    } catch (err) {
      throw setupError(
        (err as Error).message,
        `fix the environment or pass the model on the command line (frognano ${command} --help)`,
      );
    }
  }
  const parsed = BackendConfigSchema.safeParse(input);
  if (!parsed.success) {
    const why = parsed.error.issues.map((i) => `${i.path.join('.') || 'model'}: ${i.message}`).join('; ');
    throw new UsageError(`invalid model option: ${why}`, command);
  }
  return parsed.data;
}

/** A readable description: "onnx model in /models/x", "openai model m at http://...", "replay of f.json". */
export function describeBackend(cfg: BackendConfig): string {
  switch (cfg.kind) {
    case 'onnx':
      return `ONNX model in ${cfg.modelDir}`;
    case 'openai':
      return `${cfg.model} at ${cfg.baseUrl}`;
    case 'replay':
      return `replay of ${cfg.file}`;
    default:
      return JSON.stringify(cfg);
  }
}

/** Cheap checks before the (slow) model load, so a typo in a path fails in milliseconds with a clear message. */
export async function precheckBackend(cfg: BackendConfig): Promise<void> {
  if (cfg.kind === 'onnx') {
    const info = await stat(cfg.modelDir).catch(() => undefined);
    if (!info)
      throw setupError(
        `model directory ${cfg.modelDir} does not exist`,
        'pass --model-dir with the directory holding the ONNX model, tokenizer and config',
      );
    if (!info.isDirectory())
      throw setupError(
        `model directory ${cfg.modelDir} is not a directory`,
        'pass the directory that holds the model files, not a file in it',
      );
  }
  if (cfg.kind === 'replay') {
    const info = await stat(cfg.file).catch(() => undefined);
    if (!info?.isFile())
      throw setupError(
        `replay file ${cfg.file} does not exist or is not a file`,
        'pass a JSON file with {"turns": [...]} or a trajectory.json',
      );
  }
}
