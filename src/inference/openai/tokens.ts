/**
 * Prompt token counts from an OpenAI-compatible server's own tokenizer: vLLM/SGLang render the chat template in
 * `/tokenize`; llama.cpp needs `/apply-template` then `/tokenize`. Falls back to a deliberately high estimate.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { toWireMessage } from './wire.js';
import type { ChatMessage, ToolSpec } from '../types.js';

/** What a count was based on: the server's tokenizer, or our over-estimate. */
export interface PromptCount {
  tokens: number;
  exact: boolean;
}

export interface ProbeResponse {
  status: number;
  statusText: string;
  text: string;
  json: unknown;
  /** The network error, when there was no response. */
  error?: string;
}

export type ProbeRequest = (method: 'GET' | 'POST', url: string, body?: unknown) => Promise<ProbeResponse>;

export class PromptTokenCounter {
  /** Which tokenizer endpoint the server has; 'none' only once the endpoints were found absent. */
  private tokenizer?: 'vllm' | 'llamacpp' | 'none';
  /** The last count, so the loop's count and generate's clamp cost one request. */
  private last?: { key: string; count: PromptCount };

  constructor(
    /** The server root, without `/v1`. */
    private readonly rootUrl: string,
    private readonly model: string,
    private readonly request: ProbeRequest,
    /** vLLM's /tokenize also says max_model_len. */
    private readonly onContextLength: (n: number | null | undefined) => void,
  ) {}

  /**
   * `templateKwargs` are the `chat_template_kwargs` the generation request sends (enable_thinking changes the
   * generation prompt's tokens), so the count renders the same prompt.
   */
  async count(messages: ChatMessage[], tools: ToolSpec[], templateKwargs: unknown): Promise<PromptCount> {
    const wireMessages = messages.map(toWireMessage);
    const wireTools = tools.length ? tools : undefined;
    const key = createHash('sha256')
      .update(JSON.stringify([wireMessages, wireTools, templateKwargs]))
      .digest('hex');
    if (this.last?.key === key) return this.last.count;
    const count = (await this.serverCount(wireMessages, wireTools, templateKwargs)) ?? {
      tokens: overestimatePromptTokens(messages, tools),
      exact: false,
    };
    if (count.exact) this.last = { key, count };
    return count;
  }

  /**
   * An endpoint is written off only when the server says it does not exist (404/405/501), never after a timeout
   * or a 5xx, so one bad moment does not turn every later count into an estimate.
   */
  private async serverCount(
    messages: unknown[],
    tools: ToolSpec[] | undefined,
    templateKwargs: unknown,
  ): Promise<PromptCount | undefined> {
    const absent = (status: number) => status === 404 || status === 405 || status === 501;
    let vllmAbsent = false;
    if (this.tokenizer === undefined || this.tokenizer === 'vllm') {
      const r = await this.request('POST', `${this.rootUrl}/tokenize`, {
        model: this.model,
        messages,
        tools,
        add_generation_prompt: true,
        chat_template_kwargs: templateKwargs,
      });
      const parsed = z.object({ count: z.number(), max_model_len: z.number().nullish() }).safeParse(r.json);
      if (parsed.success) {
        this.tokenizer = 'vllm';
        this.onContextLength(parsed.data.max_model_len);
        return { tokens: parsed.data.count, exact: true };
      }
      if (this.tokenizer === 'vllm') return undefined;
      // llama.cpp's /tokenize exists but answers this body with 200 and no tokens; a 4xx is not proof of absence either.
      vllmAbsent = r.error === undefined && r.status >= 200 && r.status < 500;
    }
    if (this.tokenizer === undefined || this.tokenizer === 'llamacpp') {
      const applied = await this.request('POST', `${this.rootUrl}/apply-template`, {
        messages,
        tools,
        chat_template_kwargs: templateKwargs,
      });
      const prompt = z.object({ prompt: z.string() }).safeParse(applied.json);
      if (prompt.success) {
        const tokens = z
          .object({ tokens: z.array(z.unknown()) })
          .safeParse(
            (await this.request('POST', `${this.rootUrl}/tokenize`, { content: prompt.data.prompt, add_special: true }))
              .json,
          );
        if (tokens.success) {
          this.tokenizer = 'llamacpp';
          return { tokens: tokens.data.tokens.length, exact: true };
        }
      } else if (vllmAbsent && applied.error === undefined && absent(applied.status)) {
        this.tokenizer = 'none';
      }
    }
    return undefined;
  }
}

/** Code averages 3-4 characters a token; 3 overestimates, so a context limit trips early, not late. */
export const CHARS_PER_TOKEN = 3;
/** Per-message template overhead (`<|im_start|>role\n ... <|im_end|>\n`). */
const TOKENS_PER_MESSAGE = 5;

/**
 * Prompt size when the server cannot count for us: characters / 3 plus a per-message overhead, deliberately high
 * (not the Leaf loop's bytes / 4 estimate, `estimateTokens`).
 */
export function overestimatePromptTokens(messages: ChatMessage[], tools: ToolSpec[]): number {
  let chars = tools.length ? JSON.stringify(tools).length : 0;
  for (const m of messages) {
    chars += m.content.length + (m.reasoning?.length ?? 0);
    for (const c of m.tool_calls ?? []) chars += c.name.length + JSON.stringify(c.arguments).length + 40;
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * messages.length;
}
