/**
 * Token selection from one row of logits, in the order Hugging Face's generate() applies its processors:
 * repetition penalty, then temperature, top-k, top-p and min-p. Temperature 0 is greedy (argmax of the
 * penalised logits). Draws come from a seeded PRNG, so the same seed reproduces a run exactly.
 */

export interface SamplingOptions {
  /** 0 or undefined: greedy (argmax). */
  temperature?: number;
  /** 0 or undefined: no top-k cut. */
  topK?: number;
  /** 1 or undefined: no top-p cut. */
  topP?: number;
  /** 0 or undefined: no min-p cut. Keeps tokens whose probability is at least minP times the top one's. */
  minP?: number;
  /** 1 or undefined: none. >1 makes every token in `seen` less likely (CTRL-style, as transformers and vLLM). */
  repetitionPenalty?: number;
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
 * The repetition penalty on a copy of `logits`: a positive logit of a seen token is divided by the penalty,
 * a negative one multiplied, so the token always becomes less likely (transformers' and vLLM's rule).
 */
export function applyRepetitionPenalty(
  logits: ArrayLike<number>,
  seen: Iterable<number>,
  penalty: number,
): Float32Array {
  const out = Float32Array.from(logits);
  // Each distinct token once, however often it occurred.
  for (const id of seen instanceof Set ? seen : new Set(seen)) {
    if (id < 0 || id >= out.length) continue;
    const v = out[id]!;
    out[id] = v > 0 ? v / penalty : v * penalty;
  }
  return out;
}

/**
 * Tokens whose scaled logit is this far below the maximum carry a probability under e^-30 relative to the best
 * one (less than 1e-7 of the mass in total even for a 250K vocabulary); skipping them avoids sorting the whole
 * vocabulary on every step.
 */
const NEGLIGIBLE_LOGIT_GAP = 30;

/**
 * The tokens that survive the cuts with their unnormalised probabilities, most likely first.
 * Exported for the distribution tests; sampleToken draws from it.
 */
export function candidateDistribution(
  logits: ArrayLike<number>,
  opts: SamplingOptions,
): { ids: number[]; weights: number[] } {
  const temperature = opts.temperature!;
  const topK = opts.topK && opts.topK > 0 ? opts.topK : 0;
  const topP = opts.topP;
  const weigh = (kept: Candidate[], max: number) => kept.map((c) => Math.exp((c.logit - max) / temperature));
  let kept: Candidate[];
  let probs: number[];
  let total: number;
  if (topK > 0 && topK <= 256) {
    kept = topCandidates(logits, topK);
    const max = kept[0]!.logit;
    kept = kept.filter((c) => c.logit >= max - NEGLIGIBLE_LOGIT_GAP * temperature);
    probs = weigh(kept, max);
    total = probs.reduce((a, b) => a + b, 0);
  } else {
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
    const threshold = max - NEGLIGIBLE_LOGIT_GAP * temperature;
    const nucleus =
      !topK && topP !== undefined && topP > 0 && topP < 1
        ? nucleusCandidates(logits, max, threshold, temperature, topP)
        : undefined;
    kept = nucleus?.kept ?? sortedCandidates(logits, threshold, topK);
    probs = weigh(kept, max);
    total = nucleus?.total ?? probs.reduce((a, b) => a + b, 0);
  }

  let cut = kept.length;
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
  const minP = opts.minP;
  if (minP !== undefined && minP > 0) {
    // probs[0] is the top token's (unnormalised) probability; the ratio is what min-p compares.
    const floor = minP * probs[0]!;
    let keep = 1;
    while (keep < cut && probs[keep]! >= floor) keep++;
    cut = keep;
  }
  return { ids: kept.slice(0, cut).map((c) => c.id), weights: probs.slice(0, cut) };
}

interface Candidate {
  id: number;
  logit: number;
}

/** Every token within the threshold, best first; ties broken by id so the order never depends on the sort. */
function sortedCandidates(logits: ArrayLike<number>, threshold: number, topK: number): Candidate[] {
  const candidates: Candidate[] = [];
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v >= threshold) candidates.push({ id: i, logit: v });
  }
  candidates.sort((a, b) => b.logit - a.logit || a.id - b.id);
  return topK > 0 ? candidates.slice(0, topK) : candidates;
}

/**
 * The same first `k` as sortedCandidates, without sorting the thousands of tokens a real model leaves within the
 * threshold: one pass keeping a small sorted list (ids come in ascending order, so equal logits stay by id).
 */
function topCandidates(logits: ArrayLike<number>, k: number): Candidate[] {
  const top: Candidate[] = [];
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (top.length === k && v <= top[k - 1]!.logit) continue;
    let at = top.length;
    while (at > 0 && top[at - 1]!.logit < v) at--;
    top.splice(at, 0, { id: i, logit: v });
    if (top.length > k) top.pop();
  }
  return top;
}

/**
 * Top-p without top-k on a large vocabulary: the nucleus is usually a few tokens near the top, so find a logit
 * bound whose tokens already hold `topP` of the mass and sort only those (a sorted prefix of the full order).
 * `total` is the mass of every candidate, which top-p normalises by. Undefined: no bound helps; sort them all.
 */
function nucleusCandidates(
  logits: ArrayLike<number>,
  max: number,
  threshold: number,
  temperature: number,
  topP: number,
): { kept: Candidate[]; total: number } | undefined {
  let total = 0;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v >= threshold) total += Math.exp((v - max) / temperature);
  }
  for (const gap of [1, 2, 4, 8, 16]) {
    const bound = max - gap * temperature;
    let mass = 0;
    for (let i = 0; i < logits.length; i++) {
      const v = logits[i]!;
      if (v >= bound) mass += Math.exp((v - max) / temperature);
    }
    // A hair of margin so summation order can never leave the cut just outside the set.
    if (mass >= topP * total * (1 + 1e-9)) return { kept: sortedCandidates(logits, bound, 0), total };
  }
  return undefined;
}

/**
 * One token from `logits`. `seen` (prompt and generated ids) is only read when a repetition penalty is set.
 */
export function sampleToken(
  logits: ArrayLike<number>,
  opts: SamplingOptions,
  rng: Rng,
  seen?: Iterable<number>,
): number {
  const penalty = opts.repetitionPenalty;
  const scores =
    penalty !== undefined && penalty > 0 && penalty !== 1 && seen
      ? applyRepetitionPenalty(logits, seen, penalty)
      : logits;
  const temperature = opts.temperature ?? 0;
  if (!(temperature > 0)) return argmax(scores);

  const { ids, weights } = candidateDistribution(scores, { ...opts, temperature });
  let mass = 0;
  for (const w of weights) mass += w;
  let r = rng() * mass;
  for (let i = 0; i < ids.length; i++) {
    r -= weights[i]!;
    if (r < 0) return ids[i]!;
  }
  return ids[ids.length - 1]!;
}
