import { createBackend, describeRetry, OpenAIBackend, type BackendConfig } from '../inference/index.js';
import type { ModelBackend } from '../inference/types.js';
import { resolveLimits, type LeafLimits } from '../leaf/limits.js';
import { samplingFromFlags, type Sampling } from '../leaf/sampling.js';
import { parseDuration, parsePositiveInt } from './args.js';
import { setupError, UsageError } from './exitCodes.js';
import { describeBackend } from './modelConfig.js';
import type { ProgressReporter } from './progress.js';

/** What opening a backend reports to: solve's ProgressReporter, or eval's own. */
export type BackendProgress = Pick<ProgressReporter, 'phase' | 'note' | 'stop'>;

/**
 * The options of a Leaf run that `solve` and `eval` share: the model, the sandbox, upstream's limits and sampling.
 * One table and one set of parsers, so both commands read them alike.
 */
export const RUN_OPTIONS = {
  sandbox: { type: 'string' },
  'model-dir': { type: 'string' },
  endpoint: { type: 'string' },
  model: { type: 'string' },
  replay: { type: 'string' },
  'max-turns': { type: 'string' },
  'wall-time': { type: 'string' },
  'max-new-tokens': { type: 'string' },
  'context-tokens': { type: 'string' },
  'bash-timeout': { type: 'string' },
  // Sampling overrides of upstream's eval settings (src/leaf/sampling.ts).
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'top-k': { type: 'string' },
  'min-p': { type: 'string' },
  'repetition-penalty': { type: 'string' },
  seed: { type: 'string' },
  thinking: { type: 'string' },
  'parallel-tool-calls': { type: 'string' },
} as const;

/** The parsed values of RUN_OPTIONS. */
export type RunFlags = { [K in keyof typeof RUN_OPTIONS]?: string };

/** Loads the model; an OpenAI-compatible server that is down or serves another model fails now, not after retries. */
export async function openBackend(backendCfg: BackendConfig, progress: BackendProgress): Promise<ModelBackend> {
  progress.phase(`loading model: ${describeBackend(backendCfg)}`);
  let backend: ModelBackend;
  try {
    backend = await createBackend(backendCfg, {
      onRetry: (retry) => progress.note(describeRetry(retry)),
      onWarning: (message) => progress.note(`warning: ${message}`),
    });
  } catch (err) {
    progress.stop();
    throw setupError(
      `could not load the model (${describeBackend(backendCfg)}): ${(err as Error).message}`,
      'run `frognano doctor` with the same model options for details',
    );
  }
  if (backend instanceof OpenAIBackend) {
    const ping = await backend.ping();
    if (!ping.ok) {
      progress.stop();
      await closeBackend(backend);
      throw setupError(
        `the model endpoint is not usable: ${ping.message}`,
        'check --endpoint and --model (or start the server); `frognano doctor` checks it too',
      );
    }
  }
  return backend;
}

export async function closeBackend(backend: ModelBackend): Promise<void> {
  await backend.close?.().catch(() => undefined);
}

export function limitsFromFlags(v: RunFlags, command: string): Partial<LeafLimits> {
  const limits: Partial<LeafLimits> = {};
  if (v['max-turns'] !== undefined) limits.maxTurns = parsePositiveInt('max-turns', v['max-turns'], command);
  if (v['max-new-tokens'] !== undefined)
    limits.maxNewTokens = parsePositiveInt('max-new-tokens', v['max-new-tokens'], command);
  if (v['context-tokens'] !== undefined)
    limits.contextTokens = parsePositiveInt('context-tokens', v['context-tokens'], command);
  if (v['wall-time'] !== undefined) limits.wallTimeMs = parseDuration('wall-time', v['wall-time'], command);
  try {
    resolveLimits(limits);
  } catch (err) {
    throw new UsageError((err as Error).message, command);
  }
  return limits;
}

export function samplingOrUsageError(v: RunFlags, command: string): Partial<Sampling> {
  try {
    return samplingFromFlags(v);
  } catch (err) {
    throw new UsageError((err as Error).message, command);
  }
}

/** --bash-timeout is upstream's LEAF_BASH_TIMEOUT_SEC: the Bash timeout when the model gives none. */
export function toolEnvFromFlags(v: RunFlags, command: string): Record<string, string> {
  if (v['bash-timeout'] === undefined) return {};
  const ms = parseDuration('bash-timeout', v['bash-timeout'], command);
  return { LEAF_BASH_TIMEOUT_SEC: String(Math.max(1, Math.round(ms / 1000))) };
}
