/**
 * One interface for every model backend (onnx in-process, OpenAI-compatible HTTP, replay).
 * Messages follow the OpenAI chat shape, which is also what the Qwen chat template consumes.
 */
import type { RetryInfo } from './retry.js';

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  /** Stable id for matching the observation (`tool_call_id`). Backends invent one when the model gives none. */
  id: string;
  name: string;
  /** Parsed arguments. When parsing failed the call is not here but in GenerateResult.parseErrors. */
  arguments: Record<string, unknown>;
  /**
   * The arguments as the model (or the server's tool parser) wrote them, when the backend has that text: the
   * trajectory stores it verbatim, as upstream Leaf does. A backend that got arguments which are not a JSON object
   * gives `arguments: {}` with this text (upstream runs such a call with {} and the tool answers with its error).
   */
  argumentsText?: string;
}

export interface ChatMessage {
  role: Role;
  content: string;
  /** `<think>` reasoning of an assistant turn, kept apart from the answer and the tool calls. */
  reasoning?: string;
  tool_calls?: ToolCall[];
  /** For role=tool: which call this observes. */
  tool_call_id?: string;
  /** For role=tool: the tool's name. */
  name?: string;
}

/** JSON schema subset used for tool parameters. */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  additionalProperties?: boolean | JsonSchema;
  [key: string]: unknown;
}

export interface ToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

export interface GenerateOptions {
  /**
   * Per-turn generation cap. Undefined: as much as the context window leaves (upstream Leaf's eval sets
   * max_tokens_per_turn to null). Backends clamp it to what the context leaves either way.
   */
  maxNewTokens?: number;
  /** Sampling (upstream Leaf eval: temperature 0.6, top_p 0.95, top_k 20, min_p 0, repetition_penalty 1.0). 0 = greedy. */
  temperature?: number;
  topP?: number;
  /** 0 or undefined: no top-k cut. */
  topK?: number;
  /** 0 or undefined: no min-p cut. */
  minP?: number;
  /** 1.0 or undefined: none. */
  repetitionPenalty?: number;
  seed?: number;
  /** Qwen3.5 `chat_template_kwargs.enable_thinking` (upstream Leaf eval: true). */
  enableThinking?: boolean;
  /** OpenAI `parallel_tool_calls` (upstream Leaf eval: true). */
  parallelToolCalls?: boolean;
  /** Extra stop strings on top of the model's end-of-turn tokens. */
  stop?: string[];
  signal?: AbortSignal;
  /** Streaming: called with each decoded text delta. */
  onToken?: (delta: string) => void;
  /**
   * Told before each retry's wait of this call (a model server restarting, 503s, a stalled stream), so the run can
   * show it; `describeRetry(info)` makes it one line. Backends without retries never call it.
   */
  onRetry?: (info: RetryInfo) => void;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'aborted';

export interface GenerateResult {
  /** role=assistant, content without tool-call markup and without reasoning. */
  message: ChatMessage;
  finishReason: FinishReason;
  /** Tokens of the whole prompt this turn (the context used before generation). */
  promptTokens: number;
  /** Prompt tokens that had to be computed this turn (promptTokens minus reused prefix). */
  prefillTokens: number;
  completionTokens: number;
  /** Malformed tool calls, in words the model can act on; the loop reports them back to it. */
  parseErrors: string[];
  /** The raw generated text, for the trajectory. */
  rawText?: string;
  elapsedMs: number;
}

export interface BackendInfo {
  backend: 'onnx' | 'openai' | 'replay' | string;
  model: string;
  contextLength?: number;
  device?: string;
}

export interface ModelBackend {
  info(): BackendInfo;
  generate(messages: ChatMessage[], tools: ToolSpec[], options?: GenerateOptions): Promise<GenerateResult>;
  /** Token count of a prompt as this backend would see it (used for the context limit before generating). */
  countTokens?(messages: ChatMessage[], tools: ToolSpec[]): Promise<number>;
  close?(): Promise<void>;
}

export class ModelError extends Error {
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/**
 * The prompt (plus what the turn asked to generate) does not fit the model's context: the run ends with
 * `max_context_len`, not as a model failure. Backends throw it when they recognise their server's wording.
 */
export class ContextOverflowError extends ModelError {
  constructor(
    message: string,
    /** The prompt's size when the backend knows it (so a run rejected on turn 1 does not report 0 tokens). */
    readonly promptTokens?: number,
    /** The context length the server enforces, when it said. */
    readonly contextLength?: number,
  ) {
    super(message, false);
    this.name = 'ContextOverflowError';
  }
}
