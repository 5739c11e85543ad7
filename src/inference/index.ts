/**
 * Picks and builds the model backend from configuration. The onnx and replay backends are imported
 * lazily so a runner talking to a vLLM server never loads onnxruntime, and the app never loads either.
 */
import { z } from 'zod';
import { OpenAIBackend } from './openai/index.js';
import type { RetryInfo } from './retry.js';
import type { ModelBackend } from './types.js';

export { parseAssistantOutput } from './toolCallParser.js';
export { OpenAIBackend } from './openai/index.js';
export { describeRetry, type RetryInfo } from './retry.js';
export { LEAF_EVAL_SAMPLING } from './leafSampling.js';
export * from './types.js';

const positiveInt = z.number().int().positive();

export const OnnxBackendConfigSchema = z.object({
  kind: z.literal('onnx'),
  /** Directory with the exported ONNX model, tokenizer.json and the model's config files. */
  modelDir: z.string().min(1, 'model directory is required'),
  /** Execution provider: `cuda` needs onnxruntime-node's CUDA build on the runner. */
  device: z.enum(['cpu', 'cuda']).default('cpu'),
  /** Intra-op CPU threads; unset lets onnxruntime decide. */
  threads: positiveInt.optional(),
  /** Graph file inside modelDir when the export has several (e.g. quantized variants). */
  modelFile: z.string().min(1).optional(),
  /** Weight-type variant of a hub export (`onnx/decoder_model_merged_<dtype>.onnx` and its embed file). */
  dtype: z.enum(['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4']).optional(),
});

export const OpenAIBackendConfigSchema = z.object({
  kind: z.literal('openai'),
  /** e.g. http://gpu-box:8000/v1; a bare host gets `/v1` appended. */
  baseUrl: z
    .string()
    .refine((s) => /^https?:$/.test(safeUrl(s)?.protocol ?? ''), 'must be an http:// or https:// URL')
    .transform((s) => {
      const u = new URL(s);
      if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1';
      return u.toString().replace(/\/+$/, '');
    }),
  model: z.string().min(1, 'model name is required (the name the server serves it under)'),
  apiKey: z.string().optional(),
  timeoutMs: positiveInt.optional(),
  /** A streamed answer silent this long is a stalled server (default 180 s). */
  stallTimeoutMs: positiveInt.optional(),
  maxRetries: z.number().int().min(0).max(20).optional(),
  contextLength: positiveInt.optional(),
  /** Extra request fields, e.g. `{ "chat_template_kwargs": { "enable_thinking": false } }`. */
  extraBody: z.record(z.string(), z.unknown()).optional(),
});

export const ReplayBackendConfigSchema = z.object({
  kind: z.literal('replay'),
  /** `{turns:[...]}` script or a trajectory JSON. */
  file: z.string().min(1, 'replay file is required'),
});

export const BackendConfigSchema = z.discriminatedUnion('kind', [
  OnnxBackendConfigSchema,
  OpenAIBackendConfigSchema,
  ReplayBackendConfigSchema,
]);

export type BackendConfig = z.infer<typeof BackendConfigSchema>;
export type BackendConfigInput = z.input<typeof BackendConfigSchema>;

/** What the caller wants to hear from a backend while it works (progress lines, logs). */
export interface BackendHooks {
  /** Before each retry's wait; `describeRetry(info)` makes it one line. */
  onRetry?: (info: RetryInfo) => void;
  /** A degraded but working setup, once (e.g. a model server without its tool parser). */
  onWarning?: (message: string) => void;
  /** Detail for a debug log (e.g. why a request carries a max_tokens nobody configured). */
  onDebug?: (message: string) => void;
}

/** How long createBackend waits to learn an OpenAI server's context length; the backend asks again later. */
const DISCOVERY_TIMEOUT_MS = 5_000;

export async function createBackend(input: BackendConfigInput, hooks: BackendHooks = {}): Promise<ModelBackend> {
  const cfg = parseConfig(input, (path) => `backend.${path}`);
  switch (cfg.kind) {
    case 'openai': {
      const backend = new OpenAIBackend({ ...cfg, ...hooks });
      // So that info().contextLength is the server's right away when it is up; never fails creation.
      await backend.discover(AbortSignal.timeout(DISCOVERY_TIMEOUT_MS));
      return backend;
    }
    case 'onnx': {
      const { OnnxBackend } = await import('./onnx/backend.js');
      return OnnxBackend.load(cfg.modelDir, {
        modelFile: cfg.modelFile,
        dtype: cfg.dtype,
        // CPU stays as the fallback for any operator the CUDA provider lacks.
        executionProviders: cfg.device === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
        intraOpNumThreads: cfg.threads,
      });
    }
    case 'replay': {
      const { ReplayBackend } = await import('./replay.js');
      return ReplayBackend.fromFile(cfg.file);
    }
  }
}

/** Which environment variable sets each config field, so errors name what the operator must fix. */
const ENV_NAMES: Record<string, string> = {
  kind: 'FROGNANO_BACKEND',
  modelDir: 'FROGNANO_MODEL_DIR',
  device: 'FROGNANO_ONNX_DEVICE',
  threads: 'FROGNANO_ONNX_THREADS',
  modelFile: 'FROGNANO_ONNX_MODEL_FILE',
  dtype: 'FROGNANO_ONNX_DTYPE',
  baseUrl: 'FROGNANO_OPENAI_BASE_URL',
  model: 'FROGNANO_OPENAI_MODEL',
  apiKey: 'FROGNANO_OPENAI_API_KEY',
  timeoutMs: 'FROGNANO_OPENAI_TIMEOUT_MS',
  stallTimeoutMs: 'FROGNANO_OPENAI_STALL_TIMEOUT_MS',
  maxRetries: 'FROGNANO_OPENAI_MAX_RETRIES',
  contextLength: 'FROGNANO_OPENAI_CONTEXT_LENGTH',
  extraBody: 'FROGNANO_OPENAI_EXTRA_BODY',
  file: 'FROGNANO_REPLAY_FILE',
};

export class BackendConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackendConfigError';
  }
}

/**
 * Reads the backend from the environment. FROGNANO_BACKEND=onnx|openai|replay; when unset it is
 * inferred from which of FROGNANO_MODEL_DIR / FROGNANO_OPENAI_BASE_URL / FROGNANO_REPLAY_FILE is set.
 * onnx: FROGNANO_MODEL_DIR, FROGNANO_ONNX_DEVICE (cpu|cuda), FROGNANO_ONNX_THREADS, FROGNANO_ONNX_MODEL_FILE,
 * FROGNANO_ONNX_DTYPE (fp32|fp16|q8|int8|uint8|q4|q4f16|bnb4).
 * openai: FROGNANO_OPENAI_BASE_URL, FROGNANO_OPENAI_MODEL, FROGNANO_OPENAI_API_KEY, FROGNANO_OPENAI_TIMEOUT_MS,
 * FROGNANO_OPENAI_STALL_TIMEOUT_MS, FROGNANO_OPENAI_MAX_RETRIES, FROGNANO_OPENAI_CONTEXT_LENGTH, FROGNANO_OPENAI_EXTRA_BODY (JSON object).
 * replay: FROGNANO_REPLAY_FILE. Throws BackendConfigError naming the variable at fault.
 */
export function backendConfigFromEnv(env: NodeJS.ProcessEnv = process.env): BackendConfig {
  const str = (name: string): string | undefined => env[name]?.trim() || undefined;
  const int = (name: string): number | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw)) throw new BackendConfigError(`${name}=${raw} is not a whole number.`);
    return Number(raw);
  };
  let kind = str('FROGNANO_BACKEND')?.toLowerCase();
  if (!kind) {
    const present = (['FROGNANO_MODEL_DIR', 'FROGNANO_OPENAI_BASE_URL', 'FROGNANO_REPLAY_FILE'] as const).filter((n) =>
      str(n),
    );
    if (present.length !== 1) {
      throw new BackendConfigError(
        present.length === 0
          ? 'No model backend configured: set FROGNANO_BACKEND=onnx with FROGNANO_MODEL_DIR, or FROGNANO_BACKEND=openai ' +
              'with FROGNANO_OPENAI_BASE_URL and FROGNANO_OPENAI_MODEL, or FROGNANO_BACKEND=replay with FROGNANO_REPLAY_FILE.'
          : `Both ${present.join(' and ')} are set: choose one with FROGNANO_BACKEND=onnx|openai|replay.`,
      );
    }
    kind = { FROGNANO_MODEL_DIR: 'onnx', FROGNANO_OPENAI_BASE_URL: 'openai', FROGNANO_REPLAY_FILE: 'replay' }[
      present[0]!
    ];
  }
  let input: Record<string, unknown>;
  switch (kind) {
    case 'onnx':
      input = {
        kind,
        modelDir: str('FROGNANO_MODEL_DIR') ?? '',
        device: str('FROGNANO_ONNX_DEVICE')?.toLowerCase(),
        threads: int('FROGNANO_ONNX_THREADS'),
        modelFile: str('FROGNANO_ONNX_MODEL_FILE'),
        dtype: str('FROGNANO_ONNX_DTYPE')?.toLowerCase(),
      };
      break;
    case 'openai':
      input = {
        kind,
        baseUrl: str('FROGNANO_OPENAI_BASE_URL') ?? '',
        model: str('FROGNANO_OPENAI_MODEL') ?? '',
        apiKey: str('FROGNANO_OPENAI_API_KEY'),
        timeoutMs: int('FROGNANO_OPENAI_TIMEOUT_MS'),
        stallTimeoutMs: int('FROGNANO_OPENAI_STALL_TIMEOUT_MS'),
        maxRetries: int('FROGNANO_OPENAI_MAX_RETRIES'),
        contextLength: int('FROGNANO_OPENAI_CONTEXT_LENGTH'),
        extraBody: jsonObject('FROGNANO_OPENAI_EXTRA_BODY', str('FROGNANO_OPENAI_EXTRA_BODY')),
      };
      break;
    case 'replay':
      input = { kind, file: str('FROGNANO_REPLAY_FILE') ?? '' };
      break;
    default:
      throw new BackendConfigError(`FROGNANO_BACKEND=${kind} is not one of onnx, openai, replay.`);
  }
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  return parseConfig(defined, (path) => ENV_NAMES[path] ?? path, env);
}

/** zod issues as one sentence per problem, each naming the field (or its env variable). */
function parseConfig(input: unknown, name: (path: string) => string, env?: NodeJS.ProcessEnv): BackendConfig {
  const parsed = BackendConfigSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const path = issue.path.join('.') || 'kind';
    const label = name(path);
    const raw = env?.[label]?.trim() || undefined;
    // Never echo the key back, even when it is the value at fault.
    const shown = raw && label !== 'FROGNANO_OPENAI_API_KEY' ? ` (got ${JSON.stringify(raw)})` : '';
    const message = raw === undefined && env && issue.code === 'too_small' ? 'is not set' : issue.message;
    return `${label}${shown}: ${message}`;
  });
  throw new BackendConfigError(`Invalid model backend configuration: ${problems.join('; ')}.`);
}

function jsonObject(name: string, raw: string | undefined): Record<string, unknown> | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    throw new BackendConfigError(`${name} is not valid JSON: ${(e as Error).message}.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new BackendConfigError(
      `${name} must be a JSON object, e.g. {"chat_template_kwargs":{"enable_thinking":false}}.`,
    );
  }
  return value as Record<string, unknown>;
}

function safeUrl(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}
