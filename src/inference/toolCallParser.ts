/**
 * Turns one raw assistant generation into { content, reasoning, toolCalls, errors }.
 *
 * FrogNano (Qwen3.5) writes tool calls in the qwen3_coder XML form:
 *
 *   <tool_call>
 *   <function=Edit>
 *   <parameter=file_path>
 *   src/a.ts
 *   </parameter>
 *   ...
 *   </function>
 *   </tool_call>
 *
 * and some checkpoints fall back to Hermes JSON (`<tool_call>{"name": .., "arguments": {..}}</tool_call>`).
 * Value handling follows vLLM's qwen3_coder parser: exactly one leading and one trailing newline is
 * removed from a parameter value, everything else is kept verbatim (it is often code), and values are
 * converted by the tool's JSON-schema type when the tools are known. Unlike a regex split, the scanner
 * below only treats `</parameter>` as a close tag when structure follows it, so values that contain
 * `</parameter>`, `</div>` or `a < b > c` survive. Malformed calls are never guessed at: they become
 * errors phrased for the model, which the Leaf loop reports back so it can re-issue the call.
 */
import { randomBytes } from 'node:crypto';
import type { JsonSchema, ToolCall, ToolSpec } from './types.js';

export interface ParseOptions {
  /** Ids become `call_<idPrefix>_<n>`; backends pass something unique per turn. Default: random. */
  idPrefix?: string;
  /** When given, XML parameter values are converted by each tool's parameter schema. */
  tools?: ToolSpec[];
  /**
   * The chat template already opened `<think>` in the prompt, so the generation starts inside the
   * reasoning: everything up to the first `</think>` (or all of it when none comes) is reasoning.
   */
  startsInThinking?: boolean;
}

export interface ParsedAssistantOutput {
  /** Text outside reasoning and tool calls, trimmed. */
  content: string;
  /** `<think>` text, trimmed; absent when there was none or it was empty. */
  reasoning?: string;
  toolCalls: ToolCall[];
  /** One message per malformed tool call, worded for the model. */
  errors: string[];
}

const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';
const FUNCTION_OPEN = '<function=';
const FUNCTION_CLOSE = '</function>';
const PARAM_OPEN = '<parameter=';
const PARAM_CLOSE = '</parameter>';
const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
/** End-of-turn tokens a server may leave in the text when it does not strip special tokens. */
const TRAILING_SPECIAL = /(?:\s*(?:<\|im_end\|>|<\|endoftext\|>))+\s*$/;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
/** Errors listed one by one; the rest are counted (they all go back to the model as text). */
const MAX_ERRORS = 10;
/** How much of a bad fragment an error message quotes. */
const QUOTE_CHARS = 60;

export function parseAssistantOutput(raw: string, opts: ParseOptions = {}): ParsedAssistantOutput {
  const prefix = opts.idPrefix ?? randomBytes(4).toString('hex');
  const text = raw.replace(TRAILING_SPECIAL, '');
  const { reasoning, rest } = splitReasoning(text, opts.startsInThinking ?? false);
  const scan = new Scanner(rest, schemaLookup(opts.tools));
  scan.run();
  const toolCalls = scan.calls.map((c, i) => ({ id: `call_${prefix}_${i}`, name: c.name, arguments: c.arguments }));
  const errors =
    scan.errors.length > MAX_ERRORS
      ? [
          ...scan.errors.slice(0, MAX_ERRORS),
          `Malformed tool calls: ${scan.errors.length - MAX_ERRORS} more not listed.`,
        ]
      : scan.errors;
  const result: ParsedAssistantOutput = { content: scan.content.join('').trim(), toolCalls, errors };
  if (reasoning) result.reasoning = reasoning;
  return result;
}

/** Separates leading `<think>` reasoning. Later `<think>` text is left alone: it may be file content. */
export function splitReasoning(text: string, startsInThinking: boolean): { reasoning?: string; rest: string } {
  const lead = /^\s*<think>/.exec(text);
  let bodyStart: number;
  if (lead) bodyStart = lead[0].length;
  else if (startsInThinking) bodyStart = 0;
  else {
    // No opening tag: the template may still have opened it (Qwen3.5 does). Only trust a `</think>`
    // that comes before any tool call, so a file written with `</think>` in it is not mistaken.
    const close = text.indexOf(THINK_CLOSE);
    if (close < 0) return { rest: text };
    const before = text.slice(0, close);
    if (before.includes(TOOL_CALL_OPEN) || before.includes(FUNCTION_OPEN) || before.includes(THINK_OPEN)) {
      return { rest: text };
    }
    bodyStart = 0;
  }
  const close = text.indexOf(THINK_CLOSE, bodyStart);
  const body = close < 0 ? text.slice(bodyStart) : text.slice(bodyStart, close);
  const rest = close < 0 ? '' : text.slice(close + THINK_CLOSE.length);
  const reasoning = body.trim();
  return reasoning ? { reasoning, rest } : { rest };
}

type SchemaLookup = (tool: string, param: string) => JsonSchema | undefined;

function schemaLookup(tools: ToolSpec[] | undefined): SchemaLookup {
  const byName = new Map<string, Record<string, JsonSchema>>();
  for (const t of tools ?? []) byName.set(t.function.name, t.function.parameters?.properties ?? {});
  return (tool, param) => byName.get(tool)?.[param];
}

/**
 * Converts an XML parameter value by its schema type. A value that does not fit its type stays a
 * string, so the tool's own validation tells the model what was wrong instead of us guessing.
 */
export function convertParamValue(value: string, schema: JsonSchema | undefined): unknown {
  if (!schema) return value;
  const types = (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []).map((t) =>
    String(t).toLowerCase(),
  );
  if (types.length === 0 || types.includes('string')) return value;
  const v = value.trim();
  if (v === 'null') return null;
  for (const type of types) {
    if (type === 'integer' && /^[+-]?\d+$/.test(v)) return Number(v);
    if (type === 'number' && v !== '' && Number.isFinite(Number(v))) return Number(v);
    if (type === 'boolean' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
    if (type === 'object' || type === 'array') {
      try {
        const parsed: unknown = JSON.parse(v);
        const isArray = Array.isArray(parsed);
        if (type === 'array' ? isArray : parsed !== null && typeof parsed === 'object' && !isArray) return parsed;
      } catch {
        // not JSON: leave the string for the tool's validation to reject
      }
    }
  }
  return value;
}

function quote(s: string): string {
  const one = s.trim().replace(/\s+/g, ' ');
  return JSON.stringify(one.length > QUOTE_CHARS ? `${one.slice(0, QUOTE_CHARS)}...` : one);
}

/** Index just past the JSON object starting at `start` (a `{`), or -1 when it never closes. */
function jsonObjectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

class CallError extends Error {
  /** Where scanning goes on after this error, when the default resume point is wrong. */
  constructor(
    message: string,
    readonly resumeAt?: number,
  ) {
    super(message);
  }
}

/** Single pass over the text after reasoning; collects content, calls and errors. */
class Scanner {
  readonly content: string[] = [];
  readonly calls: { name: string; arguments: Record<string, unknown> }[] = [];
  readonly errors: string[] = [];
  private pos = 0;
  private callNumber = 0;

  constructor(
    private readonly text: string,
    private readonly schemaOf: SchemaLookup,
  ) {}

  run(): void {
    const t = this.text;
    // Like vLLM: bare `<function=` blocks count only when the model used no `<tool_call>` wrapper at all.
    const wrapped = t.includes(TOOL_CALL_OPEN);
    const opener = wrapped ? TOOL_CALL_OPEN : FUNCTION_OPEN;
    for (;;) {
      const start = t.indexOf(opener, this.pos);
      if (start < 0) {
        this.content.push(t.slice(this.pos));
        return;
      }
      this.content.push(t.slice(this.pos, start));
      if (wrapped) {
        this.pos = start + TOOL_CALL_OPEN.length;
        this.wrappedBlock();
      } else {
        this.pos = start;
        this.guard(() => this.xmlFunction(), false);
      }
    }
  }

  /**
   * Runs one call's parser. On failure records the error, moves to a safe resume point and returns
   * false; the rest of that block is dropped rather than read as content or as another call.
   */
  private guard(parse: () => void, wrapped = true): boolean {
    this.callNumber++;
    const at = this.pos;
    try {
      parse();
      return true;
    } catch (e) {
      if (!(e instanceof CallError)) throw e;
      this.errors.push(`Malformed tool call #${this.callNumber}: ${e.message}`);
      this.pos = e.resumeAt ?? (wrapped ? this.resumeAfterBlock(at) : this.resumeAtNextFunction(at));
      return false;
    }
  }

  /** After a bad call, continue after its `</tool_call>`, else at the next `<tool_call>`, else at the end. */
  private resumeAfterBlock(from: number): number {
    const t = this.text;
    const close = t.indexOf(TOOL_CALL_CLOSE, from);
    const nextOpen = t.indexOf(TOOL_CALL_OPEN, from);
    if (close >= 0 && (nextOpen < 0 || close < nextOpen)) return close + TOOL_CALL_CLOSE.length;
    return nextOpen >= 0 ? nextOpen : t.length;
  }

  private resumeAtNextFunction(from: number): number {
    const next = this.text.indexOf(FUNCTION_OPEN, from + 1);
    return next >= 0 ? next : this.text.length;
  }

  private skipWs(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private at(s: string): boolean {
    return this.text.startsWith(s, this.pos);
  }

  /** The inside of `<tool_call>...</tool_call>`: one call normally, several when a model packs them. */
  private wrappedBlock(): void {
    const t = this.text;
    let seen = 0;
    for (;;) {
      this.skipWs();
      if (this.pos >= t.length) break;
      if (this.at(TOOL_CALL_CLOSE)) {
        this.pos += TOOL_CALL_CLOSE.length;
        break;
      }
      if (this.at(TOOL_CALL_OPEN)) break; // previous block lacked its close tag
      if (this.at('{')) {
        if (!this.guard(() => this.hermesJson())) return;
      } else if (this.at(FUNCTION_OPEN)) {
        if (!this.guard(() => this.xmlFunction())) return;
      } else if (seen > 0) {
        // Text after a finished call with no </tool_call>: the block ended there; the text is content.
        break;
      } else {
        const junk = quote(t.slice(this.pos, this.pos + QUOTE_CHARS * 2).split(TOOL_CALL_CLOSE)[0]!);
        this.guard(() => {
          throw new CallError(
            `missing <function=...> after <tool_call>; found ${junk}. Write <tool_call>, then <function=NAME>, ` +
              'one <parameter=KEY>value</parameter> per argument, then </function> and </tool_call>.',
          );
        });
        return;
      }
      seen++;
    }
    if (seen === 0) {
      this.callNumber++;
      this.errors.push(`Malformed tool call #${this.callNumber}: empty <tool_call> block (no function given).`);
    }
  }

  private hermesJson(): void {
    const t = this.text;
    const end = jsonObjectEnd(t, this.pos);
    // Unbalanced to the end of the output: the rest is this cut-off object, not further calls.
    if (end < 0) throw new CallError('the JSON object inside <tool_call> is never closed (output cut off?).', t.length);
    let value: unknown;
    try {
      value = JSON.parse(t.slice(this.pos, end));
    } catch (e) {
      throw new CallError(`invalid JSON inside <tool_call> (${(e as Error).message}).`);
    }
    const obj = value as { name?: unknown; arguments?: unknown; parameters?: unknown };
    if (typeof obj.name !== 'string' || !NAME_RE.test(obj.name)) {
      throw new CallError('the JSON inside <tool_call> needs a "name" string naming the tool.');
    }
    let args = obj.arguments ?? obj.parameters ?? {};
    if (typeof args === 'string') {
      // Some models double-encode: "arguments": "{\"file_path\": ...}".
      try {
        args = JSON.parse(args);
      } catch {
        throw new CallError(`"arguments" of ${obj.name} is a string that is not a JSON object.`);
      }
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new CallError(`"arguments" of ${obj.name} must be a JSON object.`);
    }
    this.pos = end;
    this.calls.push({ name: obj.name, arguments: args as Record<string, unknown> });
  }

  private xmlFunction(): void {
    const t = this.text;
    const nameStart = this.pos + FUNCTION_OPEN.length;
    const nameEnd = t.indexOf('>', nameStart);
    const rawName = nameEnd < 0 ? t.slice(nameStart) : t.slice(nameStart, nameEnd);
    if (nameEnd < 0 || rawName.includes('\n'))
      throw new CallError(`missing ">" after <function=${rawName.split('\n')[0]}.`);
    const name = rawName.trim();
    if (!NAME_RE.test(name)) throw new CallError(`invalid function name ${quote(rawName)}.`);
    this.pos = nameEnd + 1;
    const args: Record<string, unknown> = {};
    for (;;) {
      this.skipWs();
      if (this.at(FUNCTION_CLOSE)) {
        this.pos += FUNCTION_CLOSE.length;
        break;
      }
      // A missing </function> is tolerated at the end of the block or of the output (vLLM does too),
      // but only after a closed parameter: a value cut off mid-way must never be run.
      if (this.pos >= t.length || this.at(TOOL_CALL_CLOSE) || this.at(TOOL_CALL_OPEN)) break;
      if (!this.at(PARAM_OPEN)) {
        // Quote just the offending piece: one stray tag or the text up to the next tag.
        const piece = /^(?:<[^>\n]*>?|[^<]+)/.exec(t.slice(this.pos, this.pos + QUOTE_CHARS * 2))![0];
        throw new CallError(`unexpected text inside <function=${name}>: ${quote(piece)}.`);
      }
      this.parameter(name, args);
    }
    this.calls.push({ name, arguments: args });
  }

  private parameter(fn: string, args: Record<string, unknown>): void {
    const t = this.text;
    const keyStart = this.pos + PARAM_OPEN.length;
    const keyEnd = t.indexOf('>', keyStart);
    const rawKey = keyEnd < 0 ? t.slice(keyStart) : t.slice(keyStart, keyEnd);
    if (keyEnd < 0 || rawKey.includes('\n')) {
      throw new CallError(`missing ">" after <parameter=${rawKey.split('\n')[0]} in ${fn}.`);
    }
    const key = rawKey.trim();
    if (!NAME_RE.test(key)) throw new CallError(`invalid parameter name ${quote(rawKey)} in ${fn}.`);
    const valueStart = keyEnd + 1;
    const end = findValueEnd(t, valueStart);
    if (!end) {
      throw new CallError(
        `the output ended inside parameter "${key}" of ${fn} (no </parameter>); the call was not run. ` +
          'If the value is long, split the work into smaller calls.',
      );
    }
    let value = t.slice(valueStart, end.valueEnd);
    if (end.unclosed && value.includes(PARAM_CLOSE)) {
      throw new CallError(`unexpected text after </parameter> of "${key}" in ${fn}.`);
    }
    if (value.startsWith('\n')) value = value.slice(1);
    if (value.endsWith('\n')) value = value.slice(0, -1);
    if (Object.prototype.hasOwnProperty.call(args, key))
      throw new CallError(`parameter "${key}" given twice in ${fn}.`);
    args[key] = convertParamValue(value, this.schemaOf(fn, key));
    this.pos = end.next;
  }
}

/** Tags that may legitimately follow a parameter's close tag. */
const AFTER_PARAM = [PARAM_OPEN, FUNCTION_CLOSE, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, FUNCTION_OPEN];
/** Where a value ends when the model forgot `</parameter>`: the next structural tag on its own line. */
const UNCLOSED_BOUNDARY = /\n(?=<\/function>|<\/tool_call>|<parameter=[A-Za-z_][A-Za-z0-9_.-]*>)/g;

/**
 * End of a parameter value starting at `from`: the first `</parameter>` that is followed (after
 * whitespace) by another tag or the end of the output, or, when the model omitted the close tag, a
 * structural tag on its own line, whichever comes first. null when the output ends inside the value.
 */
function findValueEnd(text: string, from: number): { valueEnd: number; next: number; unclosed: boolean } | null {
  let closed: { valueEnd: number; next: number } | null = null;
  for (let p = text.indexOf(PARAM_CLOSE, from); p >= 0; p = text.indexOf(PARAM_CLOSE, p + 1)) {
    let q = p + PARAM_CLOSE.length;
    while (q < text.length && /\s/.test(text[q]!)) q++;
    if (q >= text.length || AFTER_PARAM.some((tag) => text.startsWith(tag, q))) {
      closed = { valueEnd: p, next: p + PARAM_CLOSE.length };
      break;
    }
  }
  UNCLOSED_BOUNDARY.lastIndex = from;
  const m = UNCLOSED_BOUNDARY.exec(text);
  // Keep the newline in the value: the one-newline strip removes it like a normal close would.
  const unclosedAt = m && (!closed || m.index < closed.valueEnd) ? m.index + 1 : -1;
  if (unclosedAt >= 0) return { valueEnd: unclosedAt, next: unclosedAt, unclosed: true };
  return closed ? { ...closed, unclosed: false } : null;
}
