/**
 * The chat-completion wire format as vLLM (`--tool-call-parser qwen3_coder --reasoning-parser qwen3`), SGLang and
 * llama.cpp's `llama-server --jinja` send it: response schemas, assembly of a streamed answer from its deltas,
 * and the raw-text rendering of server-parsed tool calls.
 */
import { z } from 'zod';
import type { ChatMessage, ToolCall } from '../types.js';

const WireToolCallSchema = z.object({
  id: z.string().nullish(),
  function: z.object({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  }),
});

export const UsageSchema = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
});
export type Usage = z.infer<typeof UsageSchema>;

export const CompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          // vLLM < 0.11 and llama.cpp say reasoning_content; newer vLLM says reasoning.
          reasoning_content: z.string().nullish(),
          reasoning: z.string().nullish(),
          tool_calls: z.array(WireToolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

export const ChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z
              .array(
                z.object({
                  index: z.number().nullish(),
                  id: z.string().nullish(),
                  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: UsageSchema.nullish(),
  error: z.unknown().optional(),
});
export type Chunk = z.infer<typeof ChunkSchema>;

/**
 * `/v1/models`: vLLM and SGLang give `max_model_len`; llama.cpp gives `meta.n_ctx` (the slot context, which is
 * what a request can use) and lists `--alias` names under `aliases`.
 */
export const ModelListSchema = z.object({
  data: z.array(
    z.object({
      id: z.string(),
      owned_by: z.string().nullish(),
      max_model_len: z.number().nullish(),
      aliases: z.array(z.string()).nullish(),
      meta: z.object({ n_ctx: z.number().nullish() }).passthrough().nullish(),
    }),
  ),
});

/** An assistant turn as the server gave it, before tool-call parsing. */
export interface WireAssistant {
  content: string;
  reasoning: string;
  toolCalls: { id?: string | null; name: string; arguments?: string | Record<string, unknown> | null }[];
  finishReason?: string | null;
  usage?: Usage | null;
}

export function wireFromCompletion(c: z.infer<typeof CompletionSchema>): WireAssistant {
  const { message, finish_reason } = c.choices[0]!;
  return {
    content: message.content ?? '',
    reasoning: message.reasoning_content ?? message.reasoning ?? '',
    toolCalls: (message.tool_calls ?? []).map((t) => ({
      id: t.id,
      name: t.function.name,
      arguments: t.function.arguments,
    })),
    finishReason: finish_reason,
    usage: c.usage,
  };
}

/** Builds one WireAssistant from stream chunks; `add` returns the text deltas worth showing. */
export class StreamAssembler {
  private readonly out: WireAssistant = { content: '', reasoning: '', toolCalls: [] };
  private readonly calls: { id?: string; name: string; arguments: string }[] = [];

  add(chunk: Chunk): string[] {
    if (chunk.usage) this.out.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    const shown: string[] = [];
    const d = choice.delta;
    const reasoning = d?.reasoning_content ?? d?.reasoning;
    if (reasoning) {
      this.out.reasoning += reasoning;
      shown.push(reasoning);
    }
    if (d?.content) {
      this.out.content += d.content;
      shown.push(d.content);
    }
    for (const [i, tc] of (d?.tool_calls ?? []).entries()) {
      // vLLM sends the id and name once, then argument fragments under the same index.
      const slot = (this.calls[tc.index ?? i] ??= { name: '', arguments: '' });
      if (tc.id) slot.id = tc.id;
      if (tc.function?.name) slot.name = slot.name || tc.function.name;
      if (tc.function?.arguments) slot.arguments += tc.function.arguments;
    }
    if (choice.finish_reason) this.out.finishReason = choice.finish_reason;
    return shown;
  }

  get finished(): boolean {
    return Boolean(this.out.finishReason);
  }

  result(): WireAssistant {
    return { ...this.out, toolCalls: this.calls.filter(Boolean) };
  }
}

/**
 * Server-parsed tool calls written back in the qwen3_coder form the model generated them in, so the trajectory's
 * raw text shows what the model wrote even when the server took the markup apart.
 */
export function renderToolCallsXml(calls: WireAssistant['toolCalls']): string {
  return calls
    .map((c) => {
      const args = parseArgs(c.arguments);
      const params =
        typeof args === 'string'
          ? args
          : Object.entries(args)
              .map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : JSON.stringify(v)}\n</parameter>\n`)
              .join('');
      return `<tool_call>\n<function=${c.name}>\n${params}</function>\n</tool_call>`;
    })
    .join('\n');
}

function parseArgs(raw: WireAssistant['toolCalls'][number]['arguments']): Record<string, unknown> | string {
  if (raw === null || raw === undefined || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  try {
    const v = JSON.parse(raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : raw;
  } catch {
    return raw; // a cut-off or malformed argument string is shown as the server sent it
  }
}

/**
 * The arguments text sent back in the history: the model's own text, as upstream Leaf sends it, when it is a JSON
 * object; else the object it ran with ({}), since servers parse the history's arguments and reject broken JSON.
 */
function wireArguments(c: ToolCall): string {
  if (c.argumentsText !== undefined) {
    try {
      const v: unknown = JSON.parse(c.argumentsText);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) return c.argumentsText;
    } catch {
      /* fall through */
    }
  }
  return JSON.stringify(c.arguments);
}

export function toWireMessage(m: ChatMessage): Record<string, unknown> {
  switch (m.role) {
    case 'assistant': {
      const out: Record<string, unknown> = { role: 'assistant', content: m.content };
      // Qwen chat templates read reasoning_content to decide which past reasoning to keep.
      if (m.reasoning) out.reasoning_content = m.reasoning;
      if (m.tool_calls?.length) {
        out.tool_calls = m.tool_calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: wireArguments(c) },
        }));
      }
      return out;
    }
    case 'tool': {
      const out: Record<string, unknown> = { role: 'tool', content: m.content, tool_call_id: m.tool_call_id ?? '' };
      if (m.name) out.name = m.name;
      return out;
    }
    default:
      return { role: m.role, content: m.content };
  }
}
