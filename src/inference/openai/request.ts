/**
 * The chat-completion request as upstream Leaf's eval sends it (temperature and parallel_tool_calls, the rest as
 * extra_body fields), and the one field it decides for itself: max_tokens. Pure functions; the backend builds one
 * request per attempt from them.
 */
import { LEAF_EVAL_SAMPLING } from '../leafSampling.js';
import { ContextOverflowError, type ChatMessage, type GenerateOptions, type ToolSpec } from '../types.js';
import type { PromptCount } from './tokens.js';
import { toWireMessage } from './wire.js';

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  options: GenerateOptions;
  /** "none" once vLLM refused "auto": it still renders the tools, and we parse the raw markup. */
  toolChoice: 'auto' | 'none';
  maxTokens: number | undefined;
  stream: boolean;
  /** The operator's extra fields; they override the defaults. */
  extraBody: Record<string, unknown> | undefined;
}

export function chatRequestBody(r: ChatRequest): Record<string, unknown> {
  const o = r.options;
  const body: Record<string, unknown> = { model: r.model, messages: r.messages.map(toWireMessage) };
  if (r.tools.length) {
    body.tools = r.tools;
    body.tool_choice = r.toolChoice;
  }
  body.temperature = o.temperature ?? LEAF_EVAL_SAMPLING.temperature;
  if (r.tools.length) body.parallel_tool_calls = o.parallelToolCalls ?? LEAF_EVAL_SAMPLING.parallelToolCalls;
  if (r.maxTokens !== undefined) body.max_tokens = r.maxTokens;
  body.top_p = o.topP ?? LEAF_EVAL_SAMPLING.topP;
  // top_k, min_p and repetition_penalty are not OpenAI's; vLLM and SGLang read them, llama.cpp reads the first two.
  body.top_k = o.topK ?? LEAF_EVAL_SAMPLING.topK;
  body.min_p = o.minP ?? LEAF_EVAL_SAMPLING.minP;
  body.repetition_penalty = o.repetitionPenalty ?? LEAF_EVAL_SAMPLING.repetitionPenalty;
  body.chat_template_kwargs = defaultTemplateKwargs(o);
  if (o.seed !== undefined) body.seed = o.seed;
  if (o.stop?.length) body.stop = o.stop;
  if (r.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { ...body, ...r.extraBody };
}

/** The `chat_template_kwargs` a request with these options sends, so a token count renders the same prompt. */
export function templateKwargsFor(o: GenerateOptions, extraBody: Record<string, unknown> | undefined): unknown {
  return extraBody && 'chat_template_kwargs' in extraBody ? extraBody.chat_template_kwargs : defaultTemplateKwargs(o);
}

function defaultTemplateKwargs(o: GenerateOptions): Record<string, unknown> {
  return { enable_thinking: o.enableThinking ?? LEAF_EVAL_SAMPLING.enableThinking };
}

/** The context the request must fit: the usable one (the smaller of operator's and server's) and the server's. */
export interface ContextWindow {
  usable: number | undefined;
  server: number | undefined;
}

export interface MaxTokensChoice {
  maxTokens?: number;
  /** Why a cap goes out that the caller did not ask for as such (for the debug log). */
  why?: string;
}

/**
 * The request's max_tokens. Upstream Leaf sends none unless max_tokens_per_turn is set (its eval sets null), and
 * the server then stops at its own context end. So: the per-turn cap when there is one, clamped to what the
 * context leaves; with no cap, none, unless the usable context ends before the server's (an operator setting below
 * it, or a server whose context is unknown) and the prompt was counted exactly: then what that context leaves.
 * Throws ContextOverflowError when the prompt alone fills the context.
 */
export function chooseMaxTokens(
  prompt: PromptCount | undefined,
  cap: number | undefined,
  window: ContextWindow,
): MaxTokensChoice {
  const ctx = window.usable;
  if (!ctx || !prompt) return { maxTokens: cap };
  const room = ctx - prompt.tokens;
  const counted = `${prompt.tokens}${prompt.exact ? '' : ' estimated'} tokens`;
  if (room <= 0) {
    throw new ContextOverflowError(
      `the prompt (${counted}) fills the model's ${ctx}-token context`,
      prompt.tokens,
      ctx,
    );
  }
  if (cap !== undefined) {
    if (cap <= room) return { maxTokens: cap };
    const why = `max_tokens ${room}, not the per-turn cap ${cap}: the prompt (${counted}) leaves that much of the ${ctx}-token context`;
    return { maxTokens: room, why };
  }
  const serverStopsInTime = window.server !== undefined && window.server <= ctx;
  if (serverStopsInTime || !prompt.exact) return {};
  const server = window.server === undefined ? 'unknown' : `${window.server} tokens`;
  return {
    maxTokens: room,
    why:
      `max_tokens ${room} (no per-turn cap): the prompt (${counted}) leaves that much of the ${ctx}-token context, ` +
      `which ends before the server's (${server})`,
  };
}
