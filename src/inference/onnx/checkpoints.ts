/**
 * Where in a prompt to keep pinned decoder states (see prefixCache.ts): positions that later prompts share even
 * when the chat template re-renders the conversation differently.
 *
 * - `query`: the end of the last user message. A follow-up user message makes Qwen3.5's template drop the
 *   `<think>` blocks of every assistant turn before it, so the next prompt departs from this one right there.
 * - `system`: the start of the first user turn: system prompt and tool specs, the same for every conversation
 *   that uses the same tools (a follow-up job on the same repository starts a new conversation).
 *
 * Both are found by rendering the conversation up to that message with the model's own template and encoding it;
 * a position is used only when those tokens are an exact prefix of the prompt's (so the tokenizer did not merge
 * across the boundary), which makes the scheme independent of the template's details.
 */
import type { ChatMessage, ToolSpec } from '../types.js';
import type { PinKind } from './prefixCache.js';
import { encodePrompt, renderPrompt, type HfTokenizer } from './tokenizer.js';

export interface Checkpoint {
  /** Tokens of the prompt before the checkpoint. */
  at: number;
  pin: PinKind;
}

function isPrefix(prefix: readonly number[], ids: readonly number[], length = prefix.length): boolean {
  if (length > ids.length) return false;
  for (let i = 0; i < length; i++) if (prefix[i] !== ids[i]) return false;
  return true;
}

export class CheckpointFinder {
  /** Recent encodings of conversation heads, which stay the same for a whole tool loop. */
  private readonly memo = new Map<string, number[]>();

  constructor(
    private readonly tokenizer: HfTokenizer,
    /** `<|im_start|>` (a special token, so never merged with its neighbours); undefined: no system checkpoint. */
    private readonly turnStartId: number | undefined,
  ) {}

  find(messages: ChatMessage[], tools: ToolSpec[], promptIds: readonly number[]): Checkpoint[] {
    const firstUser = messages.findIndex((m) => m.role === 'user');
    const lastUser = messages.map((m) => m.role).lastIndexOf('user');
    if (firstUser < 0) return [];
    const out: Checkpoint[] = [];

    const headIds = this.encodeHead(messages.slice(0, firstUser + 1), tools);
    if (headIds && this.turnStartId !== undefined) {
      // The last turn start in "system + first user message" opens that user turn.
      const at = headIds.lastIndexOf(this.turnStartId);
      if (at > 0 && isPrefix(headIds, promptIds, at)) out.push({ at, pin: 'system' });
    }
    const queryIds = lastUser === firstUser ? headIds : this.encodeHead(messages.slice(0, lastUser + 1), tools);
    if (queryIds && queryIds.length < promptIds.length && isPrefix(queryIds, promptIds)) {
      out.push({ at: queryIds.length, pin: 'query' });
    }
    return out.sort((a, b) => a.at - b.at);
  }

  /**
   * The tokens every follow-up of this conversation starts with: the conversation as the template renders it
   * once another user message follows (earlier `<think>` blocks dropped), up to where the next turn opens.
   * Undefined when it cannot be told (no turn-start token, or the template refuses).
   */
  followUpPrefix(messages: ChatMessage[], tools: ToolSpec[]): number[] | undefined {
    if (this.turnStartId === undefined) return undefined;
    const ids = this.encodeHead([...messages, { role: 'user', content: 'follow-up' }], tools);
    const at = ids?.lastIndexOf(this.turnStartId) ?? -1;
    return at > 0 ? ids!.slice(0, at) : undefined;
  }

  /** Tokens of `messages` rendered without a generation prompt; undefined when the template refuses them. */
  private encodeHead(messages: ChatMessage[], tools: ToolSpec[]): number[] | undefined {
    const key = JSON.stringify([messages, tools]);
    const known = this.memo.get(key);
    if (known) return known;
    let text: string;
    try {
      text = renderPrompt(this.tokenizer, messages, tools, { addGenerationPrompt: false });
    } catch {
      return undefined;
    }
    const ids = encodePrompt(this.tokenizer, text);
    this.memo.set(key, ids);
    if (this.memo.size > 4) this.memo.delete(this.memo.keys().next().value!);
    return ids;
  }
}
