import { LEAF_EVAL_SAMPLING } from '../inference/leafSampling.js';
import type { GenerateOptions } from '../inference/types.js';

/** The sampling settings the loop sends with every model call. */
export type Sampling = Pick<
  GenerateOptions,
  'temperature' | 'topP' | 'topK' | 'minP' | 'repetitionPenalty' | 'seed' | 'enableThinking' | 'parallelToolCalls'
>;

/**
 * Upstream Leaf's eval sampling (src/inference/leafSampling.ts, which the backends also fall back to) plus the eval
 * config's task seed 42. Greedy decoding pushes Qwen3-family thinking models into repetition loops.
 */
export const LEAF_SAMPLING: Readonly<Required<Sampling>> = Object.freeze({ ...LEAF_EVAL_SAMPLING, seed: 42 });

type NumberKey = 'temperature' | 'topP' | 'topK' | 'minP' | 'repetitionPenalty' | 'seed';

const NUMBER_RULES: Record<NumberKey, { env: string; flag: string; ok: (n: number) => boolean; rule: string }> = {
  temperature: {
    env: 'FROGNANO_TEMPERATURE',
    flag: 'temperature',
    ok: (n) => n >= 0 && n <= 5,
    rule: 'a number from 0 to 5',
  },
  topP: { env: 'FROGNANO_TOP_P', flag: 'top-p', ok: (n) => n > 0 && n <= 1, rule: 'a number above 0, at most 1' },
  topK: {
    env: 'FROGNANO_TOP_K',
    flag: 'top-k',
    ok: (n) => Number.isInteger(n) && n >= 0,
    rule: 'a whole number, 0 or more (0: no cut)',
  },
  minP: { env: 'FROGNANO_MIN_P', flag: 'min-p', ok: (n) => n >= 0 && n <= 1, rule: 'a number from 0 to 1' },
  repetitionPenalty: {
    env: 'FROGNANO_REPETITION_PENALTY',
    flag: 'repetition-penalty',
    ok: (n) => n > 0 && n <= 10,
    rule: 'a number above 0, at most 10',
  },
  seed: {
    env: 'FROGNANO_SEED',
    flag: 'seed',
    ok: (n) => Number.isSafeInteger(n) && n >= 0,
    rule: 'a whole number, 0 or more',
  },
};
const BOOL_RULES = {
  enableThinking: { env: 'FROGNANO_ENABLE_THINKING', flag: 'thinking' },
  parallelToolCalls: { env: 'FROGNANO_PARALLEL_TOOL_CALLS', flag: 'parallel-tool-calls' },
} as const;

function parseNumber(key: NumberKey, raw: string, name: string): number {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n) || !NUMBER_RULES[key].ok(n)) {
    throw new RangeError(`${name} must be ${NUMBER_RULES[key].rule}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function parseBool(raw: string, name: string): boolean {
  const s = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  throw new RangeError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

/** Overrides from the runner's environment (FROGNANO_TEMPERATURE, FROGNANO_TOP_P ...); errors name the variable. */
export function samplingFromEnv(env: NodeJS.ProcessEnv): Partial<Sampling> {
  return samplingFrom(
    (key) => env[key],
    (rule) => rule.env,
  );
}

/** Overrides from `frognano solve` flags (--temperature, --top-p ...); errors name the flag. */
export function samplingFromFlags(values: Record<string, unknown>): Partial<Sampling> {
  return samplingFrom(
    (flag) => (typeof values[flag] === 'string' ? (values[flag] as string) : undefined),
    (rule) => rule.flag,
    '--',
  );
}

export const SAMPLING_FLAGS = [...Object.values(NUMBER_RULES), ...Object.values(BOOL_RULES)].map((r) => r.flag);

function samplingFrom(
  read: (name: string) => string | undefined,
  nameOf: (rule: { env: string; flag: string }) => string,
  prefix = '',
): Partial<Sampling> {
  const out: Partial<Sampling> = {};
  for (const [key, rule] of Object.entries(NUMBER_RULES) as [NumberKey, (typeof NUMBER_RULES)[NumberKey]][]) {
    const raw = read(nameOf(rule));
    if (raw !== undefined && raw.trim() !== '') out[key] = parseNumber(key, raw, `${prefix}${nameOf(rule)}`);
  }
  for (const [key, rule] of Object.entries(BOOL_RULES) as [
    keyof typeof BOOL_RULES,
    (typeof BOOL_RULES)[keyof typeof BOOL_RULES],
  ][]) {
    const raw = read(nameOf(rule));
    if (raw !== undefined && raw.trim() !== '') out[key] = parseBool(raw, `${prefix}${nameOf(rule)}`);
  }
  return out;
}

/** Upstream's defaults with the given overrides. */
export function resolveSampling(overrides: Partial<Sampling> = {}): Required<Sampling> {
  const out = { ...LEAF_SAMPLING };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}
