/**
 * How many page requests may be in flight at once, per client and in all: each holds a parsed round (up to 16 MiB
 * stored) until its reader has taken the page, so twelve clients that never read held 1.4 GiB (issue #31). Past the
 * client's share the answer is 429, past the total 503, both with Retry-After.
 */
export interface SlotLimits {
  perClient: number;
  global: number;
}

export const SLOT_DEFAULTS: SlotLimits = { perClient: 2, global: 8 };

export type SlotAnswer = { release: () => void } | { refused: 429 | 503 };

export interface Slots {
  /** Takes a slot for `client` (a signed-in login, or the peer address); `release` gives it back, once. */
  take(client: string): SlotAnswer;
  /** Requests in flight (tests). */
  readonly inFlight: number;
}

export function createSlots(limits: SlotLimits = SLOT_DEFAULTS): Slots {
  const perClient = new Map<string, number>();
  let total = 0;
  return {
    take(client) {
      const mine = perClient.get(client) ?? 0;
      if (mine >= limits.perClient) return { refused: 429 };
      if (total >= limits.global) return { refused: 503 };
      perClient.set(client, mine + 1);
      total++;
      let released = false;
      return {
        release: () => {
          if (released) return;
          released = true;
          total--;
          const left = (perClient.get(client) ?? 1) - 1;
          if (left > 0) perClient.set(client, left);
          else perClient.delete(client);
        },
      };
    },
    get inFlight() {
      return total;
    },
  };
}
