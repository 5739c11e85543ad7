import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { estimatePromptTokens, estimateTokens } from '../util/tokens.js';
import { sleep } from './retry.js';
import {
  ModelError,
  type BackendInfo,
  type ChatMessage,
  type GenerateOptions,
  type GenerateResult,
  type ModelBackend,
  type ToolCall,
  type ToolSpec,
} from './types.js';

/**
 * A model backend that replays scripted assistant turns: the scripted model the test suites use, and
 * `--replay` to re-run an earlier trajectory against a fresh checkout. Token counts are estimates
 * (UTF-8 bytes / 4 of the prompt as JSON and of the turn as the model would have written it), close
 * enough to exercise the context limit realistically; there is no tokenizer here.
 */

const ArgumentsSchema = z.union([
  z.record(z.string(), z.unknown()),
  // OpenAI wire format: arguments as a JSON string.
  z.string().transform((s, ctx) => {
    try {
      const v: unknown = JSON.parse(s || '{}');
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* reported below */
    }
    ctx.addIssue({ code: 'custom', message: 'arguments is not a JSON object' });
    return z.NEVER;
  }),
]);

const ScriptToolCall = z.union([
  z.object({ id: z.string().optional(), name: z.string().min(1), arguments: ArgumentsSchema.default({}) }),
  // OpenAI wire format, as in Leaf trajectories (upstream's and this project's): the arguments text is kept, and
  // text that is not a JSON object runs as {} (what upstream's harness does with it).
  z
    .object({
      id: z.string().optional(),
      function: z.object({
        name: z.string().min(1),
        arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).default({}),
      }),
    })
    .transform((c) => {
      const raw = c.function.arguments;
      if (typeof raw !== 'string') return { id: c.id, name: c.function.name, arguments: raw };
      return { id: c.id, name: c.function.name, arguments: lenientArguments(raw), argumentsText: raw };
    }),
]);

function lenientArguments(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export const ReplayTurnSchema = z.object({
  content: z
    .string()
    .nullish()
    .transform((s) => s ?? ''),
  reasoning: z.string().optional(),
  reasoning_content: z.string().optional(),
  tool_calls: z.array(ScriptToolCall).default([]),
  /** `length` replays a turn cut off at the token limit. */
  finish_reason: z.enum(['stop', 'tool_calls', 'length']).optional(),
  /** Malformed tool calls the backend's parser would have reported. */
  parse_errors: z.array(z.string()).default([]),
  /** Makes this turn fail like a broken model server (ModelError with this message). */
  error: z.string().optional(),
  /** Waits this long before answering, as a slow model would (honours cancellation). */
  delay_ms: z.number().int().nonnegative().optional(),
});
export type ReplayTurn = z.input<typeof ReplayTurnSchema>;
type Turn = z.output<typeof ReplayTurnSchema>;

const TurnsFile = z.object({ turns: z.array(ReplayTurnSchema) });
/**
 * A Leaf trajectory (upstream's format: steps with OpenAI-shaped assistant messages); this project's writers add
 * each step's finish reason and malformed tool calls under `frognano.steps`.
 */
const TrajectoryWithSteps = z.object({
  steps: z.array(z.object({ assistant: z.record(z.string(), z.unknown()) })).min(1),
  frognano: z
    .object({
      steps: z.array(z.object({ parse_errors: z.array(z.string()).optional(), finish_reason: z.string().optional() })),
    })
    .optional(),
});
const TrajectoryWithMessages = z.object({ messages: z.array(z.record(z.string(), z.unknown())) });

function parseTurns(json: unknown, source: string): Turn[] {
  const fail = (err: z.ZodError) =>
    new Error(
      `${source}: not a replay script: ${err.issues
        .slice(0, 5)
        .map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`)
        .join('; ')}`,
    );
  if (Array.isArray(json)) {
    const r = z.array(ReplayTurnSchema).safeParse(json);
    if (!r.success) throw fail(r.error);
    return r.data;
  }
  if (json && typeof json === 'object' && 'turns' in json) {
    const r = TurnsFile.safeParse(json);
    if (!r.success) throw fail(r.error);
    return r.data.turns;
  }
  const withSteps = TrajectoryWithSteps.safeParse(json);
  if (withSteps.success) {
    return withSteps.data.steps.map((s, i) => {
      const facts = withSteps.data.frognano?.steps[i];
      const finish = facts?.finish_reason === 'length' ? 'length' : undefined;
      const r = ReplayTurnSchema.safeParse({
        ...s.assistant,
        parse_errors: facts?.parse_errors ?? [],
        finish_reason: finish,
      });
      if (!r.success)
        throw fail(new z.ZodError(r.error.issues.map((x) => ({ ...x, path: ['steps', i, 'assistant', ...x.path] }))));
      return r.data;
    });
  }
  const withMessages = TrajectoryWithMessages.safeParse(json);
  if (withMessages.success) {
    const assistants = withMessages.data.messages.filter((m) => m.role === 'assistant');
    if (assistants.length) {
      return assistants.map((m, i) => {
        const r = ReplayTurnSchema.safeParse(m);
        if (!r.success)
          throw fail(new z.ZodError(r.error.issues.map((x) => ({ ...x, path: ['assistant message', i, ...x.path] }))));
        return r.data;
      });
    }
  }
  throw new Error(`${source}: not a replay script: expected {"turns": [...]} or a trajectory with assistant turns`);
}

/** How the model would have written the turn (qwen3_coder tool-call XML), for rawText and token counts. */
export function renderRawTurn(turn: {
  reasoning?: string;
  content: string;
  tool_calls: { name: string; arguments: Record<string, unknown> }[];
}): string {
  const parts: string[] = [];
  if (turn.reasoning) parts.push(`<think>\n${turn.reasoning}\n</think>\n`);
  if (turn.content) parts.push(turn.content);
  for (const c of turn.tool_calls) {
    const params = Object.entries(c.arguments)
      .map(([k, v]) => `<parameter=${k}>\n${typeof v === 'string' ? v : JSON.stringify(v)}\n</parameter>`)
      .join('\n');
    parts.push(`<tool_call>\n<function=${c.name}>\n${params}\n</function>\n</tool_call>`);
  }
  return parts.join('\n');
}

export const REPLAY_EXHAUSTED_MESSAGE = 'The replay script has no more turns; stopping here.';

export class ReplayBackend implements ModelBackend {
  private index = 0;
  private lastTotal = 0;
  private readonly turns: Turn[];

  private constructor(
    turns: Turn[],
    private readonly name: string,
  ) {
    this.turns = turns;
  }

  /** Turns as objects (validated like a file would be). */
  static fromTurns(turns: ReplayTurn[], name = 'scripted'): ReplayBackend {
    return new ReplayBackend(parseTurns(turns, name), name);
  }

  /** `{turns:[...]}`, a bare array of turns, or a trajectory JSON (ours or the Python Leaf harness's). */
  static async fromFile(file: string): Promise<ReplayBackend> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new Error(
        `cannot read replay file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new Error(`replay file ${file} is not valid JSON: ${(err as Error).message}`);
    }
    return new ReplayBackend(parseTurns(json, file), path.basename(file));
  }

  info(): BackendInfo {
    return { backend: 'replay', model: `replay:${this.name}` };
  }

  /** Scripted turns not yet played. */
  get remaining(): number {
    return this.turns.length - this.index;
  }

  async countTokens(messages: ChatMessage[], tools: ToolSpec[]): Promise<number> {
    return estimatePromptTokens(messages, tools);
  }

  async generate(messages: ChatMessage[], tools: ToolSpec[], options: GenerateOptions = {}): Promise<GenerateResult> {
    const started = Date.now();
    const promptTokens = await this.countTokens(messages, tools);
    const empty = (finishReason: GenerateResult['finishReason'], content: string): GenerateResult => ({
      message: { role: 'assistant', content },
      finishReason,
      promptTokens,
      prefillTokens: promptTokens,
      completionTokens: content ? estimateTokens(content) : 0,
      parseErrors: [],
      rawText: content,
      elapsedMs: Date.now() - started,
    });
    if (options.signal?.aborted) return empty('aborted', '');
    const turnNo = this.index;
    const turn = this.turns[this.index];
    if (!turn) return empty('stop', REPLAY_EXHAUSTED_MESSAGE);
    this.index++;
    if (turn.delay_ms) {
      try {
        await sleep(turn.delay_ms, options.signal);
      } catch {
        return empty('aborted', ''); // sleep rejects only when the signal aborts
      }
    }
    if (turn.error !== undefined) throw new ModelError(turn.error);

    const toolCalls: ToolCall[] = turn.tool_calls.map((c, i) => ({
      id: c.id ?? `replay_${turnNo}_${i}`,
      name: c.name,
      arguments: c.arguments,
      ...('argumentsText' in c && c.argumentsText !== undefined ? { argumentsText: c.argumentsText } : {}),
    }));
    const reasoning = turn.reasoning ?? turn.reasoning_content;
    const rawText = renderRawTurn({ reasoning, content: turn.content, tool_calls: toolCalls });
    let completionTokens = estimateTokens(rawText);
    const finishReason = turn.finish_reason ?? (toolCalls.length ? 'tool_calls' : 'stop');
    if (finishReason === 'length' && options.maxNewTokens) completionTokens = options.maxNewTokens;
    options.onToken?.(rawText);
    const prefillTokens = Math.max(0, promptTokens - this.lastTotal);
    this.lastTotal = promptTokens + completionTokens;
    return {
      message: {
        role: 'assistant',
        content: turn.content,
        ...(reasoning ? { reasoning } : {}),
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      },
      finishReason,
      promptTokens,
      prefillTokens,
      completionTokens,
      parseErrors: [...turn.parse_errors],
      rawText,
      elapsedMs: Date.now() - started,
    };
  }
}
