/**
 * Token selection from one row of logits: greedy, or temperature / top-k / top-p sampling driven by a
 * seeded PRNG so a run can be reproduced exactly.
 */

export interface SamplingOptions {
  /** 0 or undefined: greedy (argmax). */
  temperature?: number;
  topK?: number;
  topP?: number;
}

export type Rng = () => number;

/** splitmix32-style generator: a uniform float in [0, 1) per call, fully determined by the seed. */
export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/**
 * Tokens whose scaled logit is this far below the maximum carry a probability under e^-30 relative to the best
 * one (less than 1e-7 of the mass in total even for a 250K vocabulary); skipping them avoids sorting the whole
 * vocabulary on every step.
 */
const NEGLIGIBLE_LOGIT_GAP = 30;

export function sampleToken(logits: ArrayLike<number>, opts: SamplingOptions, rng: Rng): number {
  const temperature = opts.temperature ?? 0;
  if (!(temperature > 0)) return argmax(logits);

  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  const threshold = max - NEGLIGIBLE_LOGIT_GAP * temperature;
  const candidates: { id: number; logit: number }[] = [];
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v >= threshold) candidates.push({ id: i, logit: v });
  }
  // Ties broken by id so the order (and thus the sample) never depends on the sort implementation.
  candidates.sort((a, b) => b.logit - a.logit || a.id - b.id);

  const topK = opts.topK && opts.topK > 0 ? Math.min(opts.topK, candidates.length) : candidates.length;
  const kept = candidates.slice(0, topK);
  const probs = kept.map((c) => Math.exp((c.logit - max) / temperature));
  const total = probs.reduce((a, b) => a + b, 0);

  let cut = kept.length;
  const topP = opts.topP;
  if (topP !== undefined && topP > 0 && topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < kept.length; i++) {
      cumulative += probs[i]! / total;
      if (cumulative >= topP) {
        cut = i + 1;
        break;
      }
    }
  }
  let mass = 0;
  for (let i = 0; i < cut; i++) mass += probs[i]!;
  let r = rng() * mass;
  for (let i = 0; i < cut; i++) {
    r -= probs[i]!;
    if (r < 0) return kept[i]!.id;
  }
  return kept[cut - 1]!.id;
}
