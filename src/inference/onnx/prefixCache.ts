/**
 * Reuse of the decoder state across agent turns. Each Leaf turn re-sends the whole conversation, which only
 * grows at the end, so most of the prompt was already computed last turn; keeping that state avoids
 * re-running the prefill over tens of thousands of tokens every turn.
 *
 * Two cases, decided by the model's state layout:
 * - Only KV caches (every state grows along a sequence axis): an entry can be truncated to the longest
 *   common token prefix with the new prompt, so even a changed tail (say, the template re-rendering the
 *   last assistant turn differently from how it was sampled) costs only the tokens after the divergence.
 * - Recurrent / conv states (Qwen3.5's linear-attention layers): these fold the entire history into a
 *   fixed-size tensor and cannot be rewound, so an entry is usable only when its tokens are an EXACT prefix
 *   of the new prompt. That is why the backend stores two checkpoints per turn: right after the prompt
 *   prefill (always a prefix of the next turn's prompt when the template only appends), and after
 *   generation (a longer prefix when the template re-renders the generated turn token for token).
 *
 * Memory: each entry holds one copy of the state (KV grows with its length); the entry count is capped.
 */
import type { OnnxDecoder } from './decode.js';
import type { DecoderState } from './stateLayout.js';
import { truncateState } from './stateLayout.js';

interface Entry {
  ids: number[];
  state: DecoderState;
}

export interface PrefixHit {
  /** Tokens of the prompt already in `state`. */
  reused: number;
  state?: DecoderState;
}

export function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class PrefixCache {
  private entries: Entry[] = [];

  /** `layout`: the decoder whose states are kept (its state specs, and whether they can be rewound). */
  constructor(
    private readonly layout: Pick<OnnxDecoder, 'specs' | 'rewindable'>,
    private readonly maxEntries = 2,
  ) {}

  /**
   * Best state for `ids`. At least one token is always left to compute, because the next token's logits
   * come from running the model on the prompt's last token.
   */
  lookup(ids: readonly number[]): PrefixHit {
    const limit = ids.length - 1;
    let best: PrefixHit = { reused: 0 };
    for (const entry of this.entries) {
      const common = commonPrefixLength(entry.ids, ids);
      if (this.layout.rewindable) {
        const usable = Math.min(common, limit);
        if (usable > best.reused) best = { reused: usable, state: entry.state };
      } else if (common === entry.ids.length && common <= limit && common > best.reused) {
        best = { reused: common, state: entry.state };
      }
    }
    if (best.state && best.state.length !== best.reused) {
      best = { reused: best.reused, state: truncateState(this.layout.specs, best.state, best.reused) };
    }
    return best;
  }

  /** Remembers `state`, which must hold exactly the tokens `ids`. The oldest entry goes first. */
  store(ids: readonly number[], state: DecoderState): void {
    if (state.length !== ids.length) throw new Error(`state holds ${state.length} tokens, ids ${ids.length}`);
    if (ids.length === 0) return;
    this.entries = this.entries.filter((e) => !(e.ids.length === ids.length && commonPrefixLength(e.ids, ids) === ids.length));
    this.entries.push({ ids: [...ids], state });
    while (this.entries.length > this.maxEntries) this.entries.shift();
  }

  clear(): void {
    this.entries = [];
  }
}
