/**
 * `frognano doctor`'s questions to the server beyond ping: does it answer with parsed tool calls, and (llama.cpp
 * before `meta.n_ctx` in /v1/models) what context does /props say. Never throw.
 */
import { z } from 'zod';
import type { ToolSpec } from '../types.js';
import { describeHttpError, errorBody, errorDetail, excerpt, isAutoToolChoiceRejection } from './serverErrors.js';
import type { ServerTransport } from './transport.js';
import { CompletionSchema } from './wire.js';

/** vLLM's flags for FrogNano's tool-call and reasoning formats. */
export const VLLM_TOOL_FLAGS = '--enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3';

export interface ToolCallProbeResult {
  ok: boolean;
  /** One line for `frognano doctor`: what works, or exactly which server flags are missing. */
  message: string;
}

const PROBE_TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'report_status',
      description: 'Report that the service is ready.',
      parameters: { type: 'object', properties: { ready: { type: 'boolean' } }, required: ['ready'] },
    },
  },
];

/**
 * Does the server answer with parsed tool calls? Two small requests: tool_choice "auto" (vLLM refuses it
 * without its tool flags) and tool_choice "required" (a grammar-constrained call any model can make, which
 * must come back in `tool_calls`).
 */
export async function probeToolCalls(
  transport: ServerTransport,
  model: string,
  signal?: AbortSignal,
): Promise<ToolCallProbeResult> {
  const url = `${transport.urls.baseUrl}/chat/completions`;
  const shown = transport.displayUrl;
  const messages = [{ role: 'user', content: 'Call report_status with ready=true.' }];
  const base = {
    model,
    messages,
    tools: PROBE_TOOLS,
    temperature: 0,
    chat_template_kwargs: { enable_thinking: false },
  };
  const auto = await transport.request('POST', url, { ...base, tool_choice: 'auto', max_tokens: 1 }, signal);
  if (auto.error !== undefined) return { ok: false, message: transport.clean(`cannot reach ${shown}: ${auto.error}`) };
  if (auto.status >= 400) {
    const message = isAutoToolChoiceRejection(errorBody(auto.text))
      ? `${shown} refuses tool_choice "auto": start vLLM with ${VLLM_TOOL_FLAGS} (the runner falls back to parsing raw markup, slower and less reliable).`
      : transport.clean(`tool request refused: ${describeHttpError(shown, auto.status, auto.statusText, auto.text)}`);
    return { ok: false, message };
  }
  const required = await transport.request('POST', url, { ...base, tool_choice: 'required', max_tokens: 256 }, signal);
  const parsed = CompletionSchema.safeParse(required.json);
  if (required.error !== undefined || required.status >= 400 || !parsed.success) {
    const why =
      required.error ??
      (required.status >= 400 ? `${required.status}: ${errorDetail(required.text)}` : excerpt(required.text, 120));
    return {
      ok: false,
      message: transport.clean(
        `${shown} did not answer a tool_choice "required" request with a chat completion (${why}).`,
      ),
    };
  }
  const call = parsed.data.choices[0]!.message.tool_calls?.[0];
  if (!call) {
    return {
      ok: false,
      message: `${shown} answered without tool_calls: start vLLM with ${VLLM_TOOL_FLAGS}, or llama-server with --jinja.`,
    };
  }
  return {
    ok: true,
    message: `answers with parsed tool calls (${call.function.name}, finish_reason ${parsed.data.choices[0]!.finish_reason}).`,
  };
}

/** llama.cpp's context length from /props, for servers whose /v1/models does not say it. */
export async function propsContextLength(
  transport: ServerTransport,
  signal?: AbortSignal,
): Promise<number | undefined> {
  const props = z
    .object({ default_generation_settings: z.object({ n_ctx: z.number() }) })
    .safeParse((await transport.request('GET', `${transport.urls.rootUrl}/props`, undefined, signal)).json);
  return props.success ? props.data.default_generation_settings.n_ctx : undefined;
}
