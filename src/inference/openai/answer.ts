/**
 * From the server's answer to a GenerateResult: reading a completion or assembling a stream, then mapping the
 * wire message to the Leaf loop's (server-parsed calls, or our parse of the raw markup), the finish reason and
 * the token counts.
 */
import { randomBytes } from 'node:crypto';
import { parseAssistantOutput, splitReasoning } from '../toolCallParser.js';
import {
  ContextOverflowError,
  ModelError,
  type ChatMessage,
  type GenerateResult,
  type ToolCall,
  type ToolSpec,
} from '../types.js';
import { contextOverflowFacts, errorBody, errorDetail, excerpt, networkCause, safeJson } from './serverErrors.js';
import { readSseData, type IdleWatch } from './sse.js';
import { CHARS_PER_TOKEN, overestimatePromptTokens } from './tokens.js';
import {
  ChunkSchema,
  CompletionSchema,
  StreamAssembler,
  renderToolCallsXml,
  wireFromCompletion,
  type Usage,
  type WireAssistant,
} from './wire.js';

/** Who answered, for messages: the URL to name and the scrubber for anything quoted from the server. */
export interface AnswerSource {
  readonly displayUrl: string;
  clean(text: string): string;
}

/** The stream broke or ended early, after text may have been handed to onToken: a retry would repeat it. */
export class StreamBrokenError extends Error {}

export async function readCompletion(res: Response, source: AnswerSource): Promise<WireAssistant> {
  const text = await res.text();
  const parsed = CompletionSchema.safeParse(safeJson(text));
  if (!parsed.success) {
    const message = `${source.displayUrl} returned a response that is not a chat completion: ${excerpt(text)}`;
    throw new ModelError(source.clean(message), false);
  }
  return wireFromCompletion(parsed.data);
}

export async function readStream(
  res: Response,
  watch: IdleWatch,
  onDelta: (text: string) => void,
  source: AnswerSource,
): Promise<WireAssistant> {
  if (!res.body) throw new ModelError(`${source.displayUrl} sent an empty stream.`, true);
  const assembler = new StreamAssembler();
  let sawDone = false;
  try {
    for await (const data of readSseData(watch.pipe(res.body))) {
      if (data.trim() === '[DONE]') {
        sawDone = true;
        break;
      }
      const chunk = ChunkSchema.safeParse(safeJson(data));
      if (!chunk.success)
        throw new ModelError(source.clean(`${source.displayUrl} sent an unreadable stream event: ${excerpt(data)}`));
      if (chunk.data.error !== undefined) throw streamedError(chunk.data.error, source);
      for (const delta of assembler.add(chunk.data)) onDelta(delta);
    }
  } catch (e) {
    if (e instanceof ModelError || watch.fired) throw e;
    // A dropped connection mid-stream (not our timeout or the caller: the retry loop checks those).
    throw new StreamBrokenError(`the stream from ${source.displayUrl} broke: ${networkCause(e)}`);
  }
  if (!sawDone && !assembler.finished) throw new StreamBrokenError(`the stream from ${source.displayUrl} ended early.`);
  return assembler.result();
}

function streamedError(error: unknown, source: AnswerSource): ModelError {
  const raw = JSON.stringify({ error });
  const overflow = contextOverflowFacts(errorBody(raw));
  const message = source.clean(`${source.displayUrl} reported an error mid-stream: ${errorDetail(raw)}`);
  if (overflow) return new ContextOverflowError(message, overflow.promptTokens, overflow.contextLength);
  return new ModelError(message, true);
}

/** What toResult needs besides the answer: the request it answers and the limits that applied. */
export interface AnswerContext {
  messages: ChatMessage[];
  tools: ToolSpec[];
  started: number;
  /** The max_tokens sent, if any. */
  maxTokens: number | undefined;
  /** The usable context, if known. */
  contextLength: number | undefined;
}

export function toResult(wire: WireAssistant, ctx: AnswerContext): GenerateResult {
  const { content, reasoning, toolCalls, parseErrors } = mapAssistant(wire, ctx.tools);
  const calls = wire.toolCalls.length ? renderToolCallsXml(wire.toolCalls) : '';
  const joiner = wire.content && calls && !wire.content.endsWith('\n') ? '\n' : '';
  const text = [wire.content, calls].filter(Boolean).join(joiner);
  const rawText = wire.reasoning ? `<think>\n${wire.reasoning}\n</think>\n\n${text}` : text;
  const tokens = usageTokens(wire.usage, ctx.messages, ctx.tools, rawText);
  const truncated = wasCutOff(wire, ctx.maxTokens, ctx.contextLength);
  const message: ChatMessage = { role: 'assistant', content };
  if (reasoning) message.reasoning = reasoning;
  // A call cut off at max_tokens is never run: vLLM's parser reports it as complete, with the half-written argument.
  if (toolCalls.length && !truncated) message.tool_calls = toolCalls;
  return {
    message,
    finishReason: truncated ? 'length' : message.tool_calls ? 'tool_calls' : 'stop',
    ...tokens,
    parseErrors: truncated ? [] : parseErrors,
    rawText,
    elapsedMs: performance.now() - ctx.started,
  };
}

interface MappedAssistant {
  content: string;
  reasoning: string | undefined;
  toolCalls: ToolCall[];
  parseErrors: string[];
}

/** The server's tool calls when it parsed them, else our parse of the raw markup in the content. */
function mapAssistant(wire: WireAssistant, tools: ToolSpec[]): MappedAssistant {
  const idPrefix = randomBytes(4).toString('hex');
  const reasoning = wire.reasoning.trim() || undefined;
  if (wire.toolCalls.length) {
    // As upstream Leaf does with a server's calls: arguments that are not a JSON object run as {} (the tool then
    // answers with its own error, e.g. "ValueError: command is required"), and the text the server sent is kept.
    const toolCalls = wire.toolCalls.map((c, i) => ({
      id: c.id || `call_${idPrefix}_${i}`,
      name: c.name ?? '',
      ...decodeArguments(c.arguments),
    }));
    // A server with a tool parser but no reasoning parser leaves <think> in the content.
    const split = splitReasoning(wire.content, false);
    return { content: split.rest.trim(), reasoning: reasoning ?? split.reasoning, toolCalls, parseErrors: [] };
  }
  // No server-side tool parser (or it gave up on malformed markup): parse the raw text ourselves.
  const parsed = parseAssistantOutput(wire.content, { idPrefix, tools });
  return {
    content: parsed.content,
    reasoning: [reasoning, parsed.reasoning].filter(Boolean).join('\n\n') || undefined,
    toolCalls: parsed.toolCalls,
    parseErrors: [...parsed.errors],
  };
}

/** The answer stopped at max_tokens or the context end, whatever finish_reason the server chose to report. */
function wasCutOff(wire: WireAssistant, maxTokens: number | undefined, contextLength: number | undefined): boolean {
  if (wire.finishReason && ['length', 'max_tokens', 'max_new_tokens'].includes(wire.finishReason.toLowerCase()))
    return true;
  const usage = wire.usage;
  if (!usage) return false;
  if (maxTokens !== undefined && usage.completion_tokens >= maxTokens) return true;
  return contextLength !== undefined && usage.prompt_tokens + usage.completion_tokens >= contextLength;
}

/** What a cancelled generation hands back: the text streamed so far, never run. */
export function abortedResult(
  messages: ChatMessage[],
  tools: ToolSpec[],
  partial: string,
  started: number,
): GenerateResult {
  return {
    message: { role: 'assistant', content: partial },
    finishReason: 'aborted',
    ...usageTokens(undefined, messages, tools, partial),
    parseErrors: [],
    rawText: partial,
    elapsedMs: performance.now() - started,
  };
}

/** A server's arguments as upstream Leaf reads them (text that is not a JSON object is {}), with the text kept. */
function decodeArguments(
  raw: string | Record<string, unknown> | null | undefined,
): Pick<ToolCall, 'arguments' | 'argumentsText'> {
  if (raw === null || raw === undefined) return { arguments: {} };
  if (typeof raw !== 'string') return { arguments: raw };
  let value: unknown;
  try {
    value = JSON.parse(raw || '{}');
  } catch {
    return { arguments: {}, argumentsText: raw };
  }
  const args =
    value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  return { arguments: args, argumentsText: raw };
}

function usageTokens(
  usage: Usage | null | undefined,
  messages: ChatMessage[],
  tools: ToolSpec[],
  rawText: string,
): Pick<GenerateResult, 'promptTokens' | 'prefillTokens' | 'completionTokens'> {
  if (!usage) {
    const promptTokens = overestimatePromptTokens(messages, tools);
    return { promptTokens, prefillTokens: promptTokens, completionTokens: Math.ceil(rawText.length / CHARS_PER_TOKEN) };
  }
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    promptTokens: usage.prompt_tokens,
    prefillTokens: Math.max(0, usage.prompt_tokens - cached),
    completionTokens: usage.completion_tokens,
  };
}
