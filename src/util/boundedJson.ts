/**
 * JSON text of parsed, untrusted data without recursion: a value nested 6,000 arrays deep (12 KB of model output)
 * overflows the stack of JSON.stringify and of any recursive walk. Containers past `maxDepth` print as `[…]` / `{…}`;
 * the text stops at `maxChars`. The walk keeps its own stack, so its depth costs heap, never the call stack.
 */
export interface BoundedJsonOptions {
  /** Containers deeper than this are replaced by `[…]` or `{…}` (Infinity: never). Default 20. */
  maxDepth?: number;
  /** Text past this many characters is cut (stringifyBounded only). Default Infinity. */
  maxChars?: number;
}

export interface BoundedJson {
  text: string;
  /** Containers replaced for depth. */
  depthCut: boolean;
  /** The text was cut at maxChars. */
  truncated: boolean;
}

type Frame = { items: unknown[]; keys: string[] | null; i: number; value: object };

/** A container's frame: an array's items, or an object's own enumerable keys (undefined and functions skipped). */
function frameOf(value: object): Frame {
  if (Array.isArray(value)) return { items: value, keys: null, i: 0, value };
  const keys = Object.keys(value).filter((k) => {
    const v = (value as Record<string, unknown>)[k];
    return v !== undefined && typeof v !== 'function' && typeof v !== 'symbol';
  });
  return { items: keys.map((k) => (value as Record<string, unknown>)[k]), keys, i: 0, value };
}

function scalar(v: unknown, inArray: boolean): string | null {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return String(v);
    case 'bigint':
      return JSON.stringify(String(v));
    case 'object':
      return null;
    default:
      return inArray ? 'null' : null;
  }
}

/**
 * The JSON text as pieces (a token or a batch of them, about `batch` characters each), for streaming a large value;
 * `state` says afterwards whether a container was cut for depth.
 */
export function* jsonPieces(
  value: unknown,
  o: { maxDepth?: number; batch?: number } = {},
  state: { depthCut: boolean } = { depthCut: false },
): Generator<string> {
  const maxDepth = o.maxDepth ?? 20;
  const batch = o.batch ?? 16_384;
  let out = '';
  const stack: Frame[] = [];
  const onStack = new Set<object>();
  /** Writes a value: a scalar at once, a container by opening it (its items follow in the loop). */
  const open = (v: unknown, inArray: boolean): void => {
    const s = scalar(v, inArray);
    if (s !== null) return void (out += s);
    const obj = v as object;
    if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') {
      return void (out += scalar((obj as { toJSON(): unknown }).toJSON(), true) ?? 'null');
    }
    const isArray = Array.isArray(obj);
    if (stack.length >= maxDepth || onStack.has(obj)) {
      state.depthCut = true;
      return void (out += isArray ? '"[…]"' : '"{…}"');
    }
    out += isArray ? '[' : '{';
    stack.push(frameOf(obj));
    onStack.add(obj);
  };
  open(value, true);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i >= top.items.length) {
      out += top.keys ? '}' : ']';
      onStack.delete(top.value);
      stack.pop();
    } else {
      if (top.i > 0) out += ',';
      if (top.keys) out += `${JSON.stringify(top.keys[top.i])}:`;
      open(top.items[top.i++], !top.keys);
    }
    if (out.length >= batch) {
      yield out;
      out = '';
    }
  }
  if (out) yield out;
}

/** The JSON text of `value`, depth- and length-bounded (see the file's comment). */
export function stringifyBounded(value: unknown, o: BoundedJsonOptions = {}): BoundedJson {
  const maxChars = o.maxChars ?? Infinity;
  const state = { depthCut: false };
  const parts: string[] = [];
  let length = 0;
  for (const piece of jsonPieces(value, { maxDepth: o.maxDepth, batch: 4096 }, state)) {
    parts.push(piece);
    length += piece.length;
    if (length > maxChars) {
      return { text: parts.join('').slice(0, maxChars), depthCut: state.depthCut, truncated: true };
    }
  }
  return { text: parts.join(''), depthCut: state.depthCut, truncated: false };
}
