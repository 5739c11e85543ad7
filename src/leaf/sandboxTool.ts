import { readFileSync } from 'node:fs';

/**
 * The in-sandbox half of the Leaf tools: sandboxTool.py (standard-library Python 3, shipped beside this file and
 * copied into dist/ by `npm run build`) is run with `python3 -c` inside the sandbox for every tool call, so paths
 * resolve in the sandbox's own filesystem view and the host never touches a path the model chose.
 */
let script: string | undefined;

export function sandboxToolScript(): string {
  script ??= readFileSync(new URL('./sandboxTool.py', import.meta.url), 'utf8');
  return script;
}

/** A Python exception text (`ValueError: ...`), raised where upstream's harness raises it on the host. */
export class PythonError extends Error {
  constructor(
    readonly pythonType: string,
    message: string,
  ) {
    super(message);
    this.name = pythonType;
  }
}

/** Python's repr() of a str, for the exception texts the model knows. */
export function pyRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${quote}${out}${quote}`;
}

const PY_FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const PY_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/** Python's float() on a JSON value, with its error texts. */
export function pyFloat(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') {
    const s = value.trim();
    const special = PY_SPECIAL.exec(s);
    if (special) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
    if (PY_FLOAT.test(s)) return Number(s.replace(/_/g, ''));
    throw new PythonError('ValueError', `could not convert string to float: ${pyRepr(value)}`);
  }
  const type = value === null ? 'NoneType' : Array.isArray(value) ? 'list' : 'dict';
  throw new PythonError('TypeError', `float() argument must be a string or a real number, not '${type}'`);
}

/**
 * How long the host lets one runner call take, in seconds: upstream Leaf's environment.py rule (a Bash call gets
 * its own timeout plus 60 s, anything else 120 s). Throws where upstream throws (a timeout that is not a number),
 * which ends the run with tool_error as it does upstream.
 */
export function runnerTimeoutSeconds(tool: string, args: Record<string, unknown>): number {
  if (tool !== 'Bash') return 120;
  let value: number;
  if (args.timeout_ms !== undefined && args.timeout_ms !== null) value = pyFloat(args.timeout_ms) / 1000;
  else {
    value = args.timeout === undefined || args.timeout === null ? 120 : pyFloat(args.timeout);
    if (value > 1000) value /= 1000;
  }
  const atLeast = Number.isNaN(value) ? 0.1 : Math.max(0.1, value);
  if (!Number.isFinite(atLeast)) throw new PythonError('OverflowError', 'cannot convert float infinity to integer');
  return Math.max(1, Math.trunc(atLeast) + 60);
}
