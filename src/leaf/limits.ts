/**
 * Every bound the Leaf harness enforces. Defaults are upstream Leaf's eval run rules
 * (microsoft/FrogNano, frognano/configs/eval/swebench-verified.yaml with agent.py): 100 steps, a context budget
 * of 65,536 tokens checked after each step, 3,000 s checked before each step, no per-turn token cap.
 */
export interface LeafLimits {
  /** Upstream max_steps: model calls per run. */
  maxTurns: number;
  /**
   * Upstream max_context_tokens: the run ends with max_context_len once the context reaches it (checked after each
   * step). The loop holds the run to min(this, the model's context window) when the backend knows the window.
   */
  contextTokens: number;
  /** Upstream max_tokens_per_turn; undefined (the eval's null): as much as the context window leaves. */
  maxNewTokens?: number;
  /** Upstream max_total_time_sec: checked before each step, exit max_time. */
  wallTimeMs: number;
  /**
   * The bot's own hard stop past wallTimeMs: whatever still runs then (a slow model call, a long command) is
   * aborted. Upstream has none; a job must end.
   */
  wallTimeGraceMs: number;
  /** Per setup command (solve only). */
  setupTimeoutMs: number;
  /** Per test command (solve only). */
  testTimeoutMs: number;
}

export const DEFAULT_LIMITS: Readonly<LeafLimits> = Object.freeze({
  maxTurns: 100,
  contextTokens: 65_536,
  maxNewTokens: undefined,
  wallTimeMs: 3_000_000,
  wallTimeGraceMs: 10 * 60_000,
  setupTimeoutMs: 15 * 60_000,
  testTimeoutMs: 15 * 60_000,
});

/** Fills in defaults and rejects nonsense (zero turns, negative timeouts) with a clear message. */
export function resolveLimits(partial: Partial<LeafLimits> = {}): LeafLimits {
  const limits: LeafLimits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(partial) as [keyof LeafLimits, number | undefined][]) {
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new RangeError(`Leaf limit ${key} must be a positive number, got ${String(value)}`);
    }
    limits[key] = value;
  }
  if (limits.maxNewTokens !== undefined && limits.maxNewTokens >= limits.contextTokens) {
    throw new RangeError(
      `Leaf limit maxNewTokens (${limits.maxNewTokens}) must be smaller than contextTokens (${limits.contextTokens})`,
    );
  }
  return limits;
}
