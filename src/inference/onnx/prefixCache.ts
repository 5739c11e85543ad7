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
 * A user follow-up breaks both: Qwen3.5's template re-renders every assistant turn before the newest user
 * message without its `<think>` block, so the new prompt departs from the old one right after the previous user
 * message. Two pinned checkpoints cover that: the state at the end of the last user message (a follow-up in the
 * same conversation reuses everything up to it) and the state at the start of the first user turn (system prompt
 * and tool specs, shared by every conversation with the same tools, such as a new job on the same repository).
 * And once a turn ends without a tool call (the end of a run, when a follow-up may come), the backend prefills
 * the conversation as a follow-up will render it, while it is idle, and pins that state too; the turn-by-turn
 * entries of the finished conversation are dropped then, so the state copies held stay as many as before.
 *
 * Memory: each entry holds one copy of the state (KV grows with its length); the unpinned entries are capped,
 * and there is at most one pinned entry of each kind.
 */
import type { OnnxDecoder } from './decode.js';
import type { DecoderState } from './stateLayout.js';
import { truncateState } from './stateLayout.js';

/** Checkpoints kept apart from the turn-by-turn entries (see the comment at the top). */
export type PinKind = 'system' | 'query' | 'followup';

interface Entry {
  ids: number[];
  state: DecoderState;
  pin?: PinKind;
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

  /**
   * Remembers `state`, which must hold exactly the tokens `ids`. Unpinned: the oldest unpinned entry goes first
   * once there are `maxEntries`. Pinned: replaces the previous entry pinned as `pin`.
   */
  store(ids: readonly number[], state: DecoderState, pin?: PinKind): void {
    if (state.length !== ids.length) throw new Error(`state holds ${state.length} tokens, ids ${ids.length}`);
    if (ids.length === 0) return;
    const same = (e: Entry) => e.ids.length === ids.length && commonPrefixLength(e.ids, ids) === ids.length;
    if (pin) {
      if (this.entries.some((e) => e.pin === pin && same(e))) return;
      this.entries = this.entries.filter((e) => e.pin !== pin);
    } else {
      if (this.entries.some((e) => e.pin && same(e))) return;
      this.entries = this.entries.filter((e) => e.pin || !same(e));
    }
    this.entries.push({ ids: [...ids], state, pin });
    const unpinned = this.entries.filter((e) => !e.pin);
    if (unpinned.length > this.maxEntries) {
      const drop = new Set(unpinned.slice(0, unpinned.length - this.maxEntries));
      this.entries = this.entries.filter((e) => !drop.has(e));
    }
  }

  /** Lengths of the entries held, pinned ones named (for tests and benchmarks). */
  describe(): { tokens: number; pin?: PinKind }[] {
    return this.entries.map((e) => ({ tokens: e.ids.length, ...(e.pin ? { pin: e.pin } : {}) }));
  }

  /** Forgets the turn-by-turn entries, keeping the pinned ones. */
  dropUnpinned(): void {
    this.entries = this.entries.filter((e) => e.pin);
  }

  clear(): void {
    this.entries = [];
  }
}
