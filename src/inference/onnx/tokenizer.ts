/**
 * Tokenizer and chat template of a local model directory, through @huggingface/transformers, strictly offline.
 */
import path from 'node:path';
import type { ChatMessage, ToolSpec } from '../types.js';
import { ModelError } from '../types.js';

type TransformersModule = typeof import('@huggingface/transformers');
export type HfTokenizer = Awaited<ReturnType<TransformersModule['AutoTokenizer']['from_pretrained']>>;

/** transformers.js resolves local models through a process-wide env; loads are serialized so two never race. */
let loadChain: Promise<unknown> = Promise.resolve();

export async function loadTokenizer(modelDir: string): Promise<HfTokenizer> {
  const run = async () => {
    const { AutoTokenizer, env } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = path.dirname(modelDir) + path.sep;
    try {
      return await AutoTokenizer.from_pretrained(path.basename(modelDir), { local_files_only: true });
    } catch (err) {
      throw new ModelError(`cannot load the tokenizer from ${modelDir}: ${(err as Error).message}`);
    }
  };
  const result = loadChain.then(run, run);
  loadChain = result.catch(() => undefined);
  return result;
}

/**
 * Our messages in the shape Hugging Face chat templates expect: OpenAI-style `tool_calls` with a `function`
 * object, and the reasoning under `reasoning_content` (Qwen's name).
 */
export function toTemplateMessages(messages: ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    const out: Record<string, unknown> = { role: m.role, content: m.content ?? '' };
    if (m.reasoning !== undefined) out.reasoning_content = m.reasoning;
    if (m.tool_calls?.length) {
      out.tool_calls = m.tool_calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      }));
    }
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined) out.name = m.name;
    return out;
  });
}

export interface RenderOptions {
  /** Default true: end with the assistant turn's opening (and Qwen3.5's `<think>`). */
  addGenerationPrompt?: boolean;
  /** Passed to the template as `enable_thinking` (Qwen3.5: false closes an empty think block); unset: not passed. */
  enableThinking?: boolean;
}

export function renderPrompt(
  tokenizer: HfTokenizer,
  messages: ChatMessage[],
  tools: ToolSpec[],
  opts: RenderOptions = {},
): string {
  try {
    return tokenizer.apply_chat_template(toTemplateMessages(messages) as never, {
      tools: tools.length ? (tools as unknown as object[]) : null,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      tokenize: false,
      ...(opts.enableThinking !== undefined ? { enable_thinking: opts.enableThinking } : {}),
    }) as string;
  } catch (err) {
    throw new ModelError(`the chat template failed to render the conversation: ${(err as Error).message}`);
  }
}

export function encodePrompt(tokenizer: HfTokenizer, text: string): number[] {
  // The template already wrote every special token; the tokenizer must not add its own.
  return tokenizer.encode(text, { add_special_tokens: false });
}

/** The id of `token` when the vocabulary has it as one token. */
export function singleTokenId(tokenizer: HfTokenizer, token: string): number | undefined {
  const id = tokenizer.get_vocab().get(token);
  return typeof id === 'number' ? id : undefined;
}
