/**
 * Every bound the Leaf harness enforces. Each one that ends a run has its own exit reason
 * (see ExitReason in trajectory.ts) so a report can say exactly why the model stopped.
 */
export interface LeafLimits {
  /** Assistant turns (model calls) per run; a turn with only malformed tool calls counts too. */
  maxTurns: number;
  /** The model's context window; a turn is only started when prompt + maxNewTokens fits in it. */
  contextTokens: number;
  /** Generated tokens per assistant turn (FrogNano was trained with 8,192). */
  maxNewTokens: number;
  /** Wall-clock time of the agent loop (model + tools), not counting setup and test commands. */
  wallTimeMs: number;
  /** Default Bash timeout when the model gives none. */
  bashTimeoutMs: number;
  /** Upper bound for the Bash `timeout` the model may ask for. */
  bashMaxTimeoutMs: number;
  /** Read/Write/Edit/Glob must answer within this; a sandbox that does not is treated as broken. */
  fileToolTimeoutMs: number;
  /** Per setup command (solve only). */
  setupTimeoutMs: number;
  /** Per test command (solve only). */
  testTimeoutMs: number;
}

export const DEFAULT_LIMITS: Readonly<LeafLimits> = Object.freeze({
  maxTurns: 100,
  contextTokens: 131_072,
  maxNewTokens: 8_192,
  wallTimeMs: 60 * 60_000,
  bashTimeoutMs: 120_000,
  bashMaxTimeoutMs: 600_000,
  fileToolTimeoutMs: 60_000,
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
  if (limits.maxNewTokens >= limits.contextTokens) {
    throw new RangeError(
      `Leaf limit maxNewTokens (${limits.maxNewTokens}) must be smaller than contextTokens (${limits.contextTokens})`,
    );
  }
  return limits;
}
