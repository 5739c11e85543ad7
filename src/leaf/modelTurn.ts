import { ContextOverflowError, type ChatMessage, type GenerateResult, type ToolCall } from '../inference/types.js';
import { pyJsonDumps } from './pyJson.js';
import type { AssistantMessage, ExitReason, TrajectoryMessage } from './trajectoryFormat.js';

/** What the model's answer and the tools' outputs become: each message as stored and as the backends take it. */

/** A message in both shapes: `stored` in the trajectory (upstream's), `wire` sent back to the model. */
export interface RecordedMessage<Stored extends TrajectoryMessage = TrajectoryMessage> {
  stored: Stored;
  wire: ChatMessage;
}

/**
 * Upstream's words for a server that refused a prompt as too long (agent.py _is_context_overflow), plus
 * llama.cpp's; a backend that recognised it already throws ContextOverflowError.
 */
export function isContextOverflow(err: unknown): boolean {
  if (err instanceof ContextOverflowError) return true;
  const m = (err instanceof Error ? err.message : String(err)).toLowerCase();
  return (
    [
      'context_length_exceeded',
      'reduce the length',
      'maximum context length',
      'exceeds the available context size',
    ].some((p) => m.includes(p)) ||
    (m.includes('context length') && m.includes('exceed'))
  );
}

/** Every call gets a non-empty id unique within the run: observations are matched by it. */
export function normalizeCalls(calls: ToolCall[] | undefined, turn: number, seen: Set<string>): ToolCall[] {
  return (calls ?? []).map((c, i) => {
    let id = typeof c.id === 'string' && c.id.trim() ? c.id : `call_${turn}_${i}`;
    while (seen.has(id)) id = `${id}_${turn}`;
    seen.add(id);
    const args = c.arguments && typeof c.arguments === 'object' && !Array.isArray(c.arguments) ? c.arguments : {};
    return { ...c, id, name: String(c.name ?? ''), arguments: args };
  });
}

/** The assistant turn; stored as upstream stores it (agent.py _message_dict): arguments as JSON text. */
export function assistantMessage(result: GenerateResult, calls: ToolCall[]): RecordedMessage<AssistantMessage> {
  const stored: AssistantMessage = {
    role: 'assistant',
    content: result.message.content ? result.message.content : null,
  };
  if (calls.length) {
    stored.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.argumentsText ?? pyJsonDumps(c.arguments) },
    }));
  }
  if (result.message.reasoning) stored.reasoning_content = result.message.reasoning;
  const wire: ChatMessage = {
    role: 'assistant',
    content: result.message.content ?? '',
    ...(result.message.reasoning ? { reasoning: result.message.reasoning } : {}),
    ...(calls.length ? { tool_calls: calls } : {}),
  };
  return { stored, wire };
}

/** A tool's output; the backends also get the tool's name. */
export function toolMessage(call: ToolCall, output: string): RecordedMessage {
  return {
    stored: { role: 'tool', tool_call_id: call.id, content: output },
    wire: { role: 'tool', tool_call_id: call.id, name: call.name, content: output },
  };
}

/** Upstream's reading of a turn cut off by a length limit (agent.py _length_exit_reason). */
export function lengthExitReason(result: GenerateResult, budget: number, maxNewTokens: number | undefined): ExitReason {
  const cap = maxNewTokens ?? 0;
  if (budget > 0 && result.promptTokens + result.completionTokens >= budget) return 'max_context_len';
  if (cap && result.completionTokens >= cap) return 'max_tokens_per_turn';
  return 'max_context_len';
}
