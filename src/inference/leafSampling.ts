import type { GenerateOptions } from './types.js';

/**
 * Upstream Leaf's eval sampling (`frognano/configs/eval/swebench-verified.yaml`: temperature, parallel_tool_calls
 * and extra_body), which FrogNano-4B's published score was measured with. Backends fall back to these when a
 * caller leaves a field unset; the loop passes them explicitly.
 */
export const LEAF_EVAL_SAMPLING = {
  temperature: 0.6,
  topP: 0.95,
  topK: 20,
  minP: 0,
  repetitionPenalty: 1.0,
  parallelToolCalls: true,
  enableThinking: true,
} as const satisfies GenerateOptions;
