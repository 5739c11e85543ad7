import path from 'node:path';
import picomatch from 'picomatch';
import { z } from 'zod';
import type { ToolCall, ToolSpec } from '../inference/types.js';
import { FileTooLargeError, SandboxPathError, type Sandbox } from '../sandbox/types.js';
import { DEFAULT_LIMITS, type LeafLimits } from './limits.js';
import { readLineWindow } from './lineWindow.js';
import { oneLine, truncateHead } from './text.js';

/**
 * The five Leaf tools. FrogNano was trained on exactly these names, parameters and output shapes
 * (`N. text` lines, `Wrote PATH (N bytes).`, `Exit code: N` / `STDOUT:` / `STDERR:` ...), so any change
 * here makes the model worse. Argument handling is lenient where models are sloppy (numbers as strings,
 * `path` for `file_path`) and strict where a mistake would damage files.
 */

export const READ_MAX_CHARS = 20_000;
export const BASH_MAX_CHARS = 30_000;
export const GLOB_MAX_FILES = 1_000;
/** Files a Glob looks at before giving up; protects against repositories with vendored millions. */
export const GLOB_SCAN_LIMIT = 200_000;
/**
 * Largest file Read and Edit load into memory whole: a multi-GB file in a repository must not exhaust the
 * runner's memory. Read pages through larger files with offset and limit; Edit sends the model to Bash.
 */
export const FILE_TOOL_MAX_BYTES = 16 * 1024 * 1024;
/** How far a paged Read of a large file may scan for its lines; beyond, Bash (sed -n) is the tool. */
export const READ_SCAN_MAX_BYTES = 1024 * 1024 * 1024;
/** Leading bytes in which a NUL marks a file binary. */
const BINARY_PROBE_BYTES = 8000;
/** Per-stream capture cap for Bash; far above BASH_MAX_CHARS, so the marker counts what was dropped. */
const BASH_CAPTURE_BYTES = 256 * 1024;
/** How long past its own timeout a Bash call may take before the sandbox counts as broken. */
const BASH_WATCHDOG_GRACE_MS = 30_000;

export const TOOL_NAMES = ['Read', 'Write', 'Edit', 'Glob', 'Bash'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export const LEAF_TOOLS: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'Read',
      description:
        'Read a text file from the repository. Returns its path, then the lines numbered from 1 as `N. text`. ' +
        'Use offset and limit to page through long files.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'File to read, relative to the repository root.' },
          offset: { type: 'integer', description: 'Optional line number (1-based) to start from.' },
          limit: { type: 'integer', description: 'Optional maximum number of lines to return.' },
        },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Write',
      description: 'Write a whole file, replacing it if it exists and creating missing parent directories.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'File to write, relative to the repository root.' },
          content: { type: 'string', description: 'The complete new contents of the file.' },
        },
        required: ['file_path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Edit',
      description:
        'Replace an exact piece of text in a file. old_string must occur exactly once unless replace_all is true; ' +
        'include enough surrounding lines to make it unique.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'File to edit, relative to the repository root.' },
          old_string: { type: 'string', description: 'The exact text to replace, whitespace included.' },
          new_string: { type: 'string', description: 'The text to put in its place.' },
          replace_all: { type: 'boolean', description: 'Replace every occurrence instead of exactly one.' },
        },
        required: ['file_path', 'old_string', 'new_string'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Glob',
      description: 'List files matching a glob pattern (`**` matches any number of directories), sorted by path.',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'Glob pattern, for example **/*.ts or src/*.py.' },
          path: { type: 'string', description: 'Optional directory to search in (default: the repository root).' },
        },
        required: ['pattern'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description:
        'Run a shell command with bash in the repository root and return its exit code, stdout and stderr. ' +
        'There is no network access.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'The command to run.' },
          description: { type: 'string', description: 'A few words on what the command does.' },
          timeout: { type: 'number', description: 'Optional timeout in seconds (default 120).' },
        },
        required: ['command'],
      },
    },
  },
];

// ---- argument schemas -------------------------------------------------------------------------

/** Models often send numbers as strings ("10"); accept those, refuse anything else. */
const looseNumber = z.preprocess(
  (v) => (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v),
  z.number(),
);
const looseInt = looseNumber.transform((n) => Math.trunc(n));
const looseBool = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  const s = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off', ''].includes(s)) return false;
  return v;
}, z.boolean());
/** Scalars become text; anything else (objects, arrays) is a mistake worth telling the model about. */
const looseString = z.preprocess((v) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : v), z.string());
const filePath = looseString.pipe(z.string().trim().min(1, 'must not be empty'));

/** `path` is accepted for `file_path`, the most common slip. */
function withFilePathAlias(v: unknown): unknown {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    if (o.file_path === undefined && o.path !== undefined) return { ...o, file_path: o.path };
  }
  return v;
}

export const ReadArgs = z.preprocess(
  withFilePathAlias,
  z.object({ file_path: filePath, offset: looseInt.optional(), limit: looseInt.optional() }),
);
export const WriteArgs = z.preprocess(
  withFilePathAlias,
  z.object({
    file_path: filePath,
    // A parser that JSON-decoded a JSON file's contents hands us an object: write it back as JSON.
    content: z.preprocess(
      (v) => (v !== null && typeof v === 'object' ? `${JSON.stringify(v, null, 2)}\n` : v),
      looseString,
    ),
  }),
);
export const EditArgs = z.preprocess(
  withFilePathAlias,
  z.object({
    file_path: filePath,
    old_string: looseString,
    new_string: looseString,
    replace_all: looseBool.optional(),
  }),
);
export const GlobArgs = z.object({
  pattern: looseString.pipe(z.string().trim().min(1, 'must not be empty')),
  path: looseString.optional(),
});
export const BashArgs = z.object({
  command: looseString.pipe(z.string().refine((s) => s.trim() !== '', 'must not be empty')),
  description: looseString.optional(),
  timeout: looseNumber.optional(),
  /** Some harnesses call it timeout_ms; accepted for robustness. */
  timeout_ms: looseNumber.optional(),
});

// ---- errors -----------------------------------------------------------------------------------

/** A mistake the model can fix; rendered as `Kind: message` like the trained harness (`ValueError: ...`). */
export class ToolUsageError extends Error {
  constructor(readonly kind: string, message: string) {
    super(message);
    this.name = kind;
  }
}

/** The sandbox itself failed (cannot spawn, stopped answering): the run ends with exit reason tool_error. */
export class ToolInfrastructureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInfrastructureError';
  }
}

/** The run was cancelled or ran out of wall time while a tool was running. */
export class ToolAbortedError extends Error {
  constructor() {
    super('tool call aborted');
    this.name = 'ToolAbortedError';
  }
}

function describeZodError(tool: string, err: z.ZodError): string {
  const parts = err.issues.map((i) => {
    const where = i.path.length ? i.path.join('.') : 'arguments';
    if (i.code === 'invalid_type' && /received undefined/.test(i.message)) return `${where} is required`;
    return `${where}: ${i.message}`;
  });
  return `invalid arguments for ${tool}: ${parts.join('; ')}`;
}

/** Error text for the model, in the `Kind: message` shape it was trained on. */
export function renderToolError(tool: string, err: unknown): string {
  if (err instanceof z.ZodError) return `ValueError: ${describeZodError(tool, err)}`;
  if (err instanceof ToolUsageError) return `${err.kind}: ${err.message}`;
  if (err instanceof SandboxPathError) return `PermissionError: ${err.message}`;
  const message = err instanceof Error ? err.message : String(err);
  if (/not found/i.test(message)) return `FileNotFoundError: ${message}`;
  if (/is a directory/i.test(message)) return `IsADirectoryError: ${message}`;
  if (/is not a directory/i.test(message)) return `NotADirectoryError: ${message}`;
  return `OSError: ${message}`;
}

/** 1536 -> "1.5 KiB"; sizes in messages to the model. */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** Quotes a path for the Bash command a message suggests, when it needs quoting. */
function shellQuote(p: string): string {
  return /^[\w./+-]+$/.test(p) ? p : `'${p.replace(/'/g, `'\\''`)}'`;
}

// ---- executor ---------------------------------------------------------------------------------

export interface ToolOutcome {
  /** What the model sees as the observation. */
  output: string;
  /** True when the call failed (bad arguments, missing file ...); a non-zero Bash exit is not an error. */
  isError: boolean;
  elapsedMs: number;
}

export type ToolLimits = Pick<LeafLimits, 'bashTimeoutMs' | 'bashMaxTimeoutMs' | 'fileToolTimeoutMs'> & {
  /** Files over this many bytes are not loaded whole (default FILE_TOOL_MAX_BYTES). */
  maxFileBytes: number;
  /** Bytes a paged Read of a larger file may scan (default READ_SCAN_MAX_BYTES). */
  readScanMaxBytes: number;
};

/** One line describing a call, for progress events and trajectory summaries. */
export function summarizeToolCall(call: Pick<ToolCall, 'name' | 'arguments'>): string {
  const a = call.arguments ?? {};
  const pick = (k: string) => (typeof a[k] === 'string' ? (a[k] as string) : a[k] === undefined ? '' : JSON.stringify(a[k]));
  let s: string;
  switch (call.name) {
    case 'Read':
    case 'Write':
    case 'Edit':
      s = pick('file_path') || pick('path');
      break;
    case 'Glob':
      s = pick('pattern') + (a.path ? ` in ${pick('path')}` : '');
      break;
    case 'Bash':
      s = pick('command');
      break;
    default:
      s = JSON.stringify(a);
  }
  return oneLine(s, 120);
}

/**
 * Runs Leaf tool calls against a Sandbox. Model mistakes come back as text; only a broken sandbox
 * (ToolInfrastructureError) or an abort (ToolAbortedError) is thrown, for the loop to end the run.
 */
export class ToolExecutor {
  private readonly limits: ToolLimits;

  constructor(private readonly sandbox: Sandbox, limits: Partial<ToolLimits> = {}) {
    this.limits = {
      bashTimeoutMs: limits.bashTimeoutMs ?? DEFAULT_LIMITS.bashTimeoutMs,
      bashMaxTimeoutMs: limits.bashMaxTimeoutMs ?? DEFAULT_LIMITS.bashMaxTimeoutMs,
      fileToolTimeoutMs: limits.fileToolTimeoutMs ?? DEFAULT_LIMITS.fileToolTimeoutMs,
      maxFileBytes: limits.maxFileBytes ?? FILE_TOOL_MAX_BYTES,
      readScanMaxBytes: limits.readScanMaxBytes ?? READ_SCAN_MAX_BYTES,
    };
  }

  async execute(call: Pick<ToolCall, 'name' | 'arguments'>, signal?: AbortSignal): Promise<ToolOutcome> {
    const started = Date.now();
    const done = (output: string, isError: boolean): ToolOutcome => ({ output, isError, elapsedMs: Date.now() - started });
    if (signal?.aborted) throw new ToolAbortedError();
    const args = call.arguments && typeof call.arguments === 'object' ? call.arguments : {};
    try {
      switch (call.name) {
        case 'Read':
          return done(await this.fileOp('Read', signal, () => this.read(ReadArgs.parse(args))), false);
        case 'Write':
          return done(await this.fileOp('Write', signal, () => this.write(WriteArgs.parse(args))), false);
        case 'Edit':
          return done(await this.fileOp('Edit', signal, () => this.edit(EditArgs.parse(args))), false);
        case 'Glob':
          return done(await this.fileOp('Glob', signal, () => this.glob(GlobArgs.parse(args))), false);
        case 'Bash':
          return done(await this.bash(BashArgs.parse(args), signal), false);
        default:
          return done(`Unknown tool: ${call.name}. Available tools: ${TOOL_NAMES.join(', ')}.`, true);
      }
    } catch (err) {
      if (err instanceof ToolInfrastructureError || err instanceof ToolAbortedError) throw err;
      return done(renderToolError(call.name, err), true);
    }
  }

  /** File operations are quick; one that hangs means the sandbox is gone. */
  private async fileOp(name: string, signal: AbortSignal | undefined, op: () => Promise<string>): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ToolInfrastructureError(`${name} got no answer from the sandbox within ${this.limits.fileToolTimeoutMs / 1000}s`)),
        this.limits.fileToolTimeoutMs,
      );
      onAbort = () => reject(new ToolAbortedError());
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([op(), guard]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Repo-relative display form of a path the sandbox accepted (`/work/repo/a/../b.txt` -> `b.txt`). */
  private display(p: string): string {
    let s = p.replace(/\\/g, '/');
    const wd = this.sandbox.workdir.replace(/\\/g, '/').replace(/\/+$/, '');
    if (s === wd) s = '.';
    else if (s.startsWith(`${wd}/`)) s = s.slice(wd.length + 1);
    s = path.posix.normalize(s.replace(/^\/+/, ''));
    return s === '' ? '.' : s.replace(/\/+$/, '');
  }

  private binaryFile(filePath: string, size: number): ToolUsageError {
    return new ToolUsageError(
      'ValueError',
      `${this.display(filePath)} looks like a binary file (${size} bytes); inspect it with Bash (e.g. xxd | head) instead`,
    );
  }

  private async read(a: z.infer<typeof ReadArgs>): Promise<string> {
    const offset = Math.max(1, a.offset ?? 1);
    const limit = a.limit ?? 0;
    let buf: Buffer;
    try {
      buf = await this.sandbox.readFile(a.file_path, { maxBytes: this.limits.maxFileBytes });
    } catch (err) {
      if (err instanceof FileTooLargeError) return this.readLargeFile(a.file_path, err.size, offset, limit);
      throw err;
    }
    if (buf.subarray(0, BINARY_PROBE_BYTES).includes(0)) throw this.binaryFile(a.file_path, buf.length);
    const lines = buf.toString('utf8').split(/\r\n|\n|\r/);
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    const end = limit <= 0 ? lines.length : Math.min(lines.length, offset - 1 + limit);
    const numbered: string[] = [];
    for (let i = offset - 1; i < end; i++) numbered.push(`${i + 1}. ${lines[i]}`);
    return truncateHead(`${this.display(a.file_path)}\n${numbered.join('\n')}`, READ_MAX_CHARS);
  }

  /**
   * Read of a file over maxFileBytes: the requested window is streamed (same output as for a small file), so a
   * window is required; without one, or when it lies too far in, the model is pointed to Bash.
   */
  private async readLargeFile(filePath: string, size: number, offset: number, limit: number): Promise<string> {
    const shown = this.display(filePath);
    const bash = `use Bash instead, e.g. \`sed -n '${offset},${offset + Math.max(limit, 200) - 1}p' ${shellQuote(shown)}\`, head, tail or grep -n`;
    if (limit <= 0 || !this.sandbox.openFileStream) {
      throw new ToolUsageError(
        'ValueError',
        `${shown} is ${formatBytes(size)}, too large to Read whole (limit ${formatBytes(this.limits.maxFileBytes)}); ` +
          (this.sandbox.openFileStream ? `pass offset and limit to read part of it, or ${bash}` : bash),
      );
    }
    const stream = await this.sandbox.openFileStream(filePath);
    try {
      const r = await readLineWindow(stream, {
        prefix: `${shown}\n`,
        offset,
        limit,
        maxChars: READ_MAX_CHARS,
        maxScanBytes: this.limits.readScanMaxBytes,
        binaryProbeBytes: BINARY_PROBE_BYTES,
      });
      if (r.kind === 'binary') throw this.binaryFile(filePath, size);
      if (r.kind === 'scan_limit') {
        throw new ToolUsageError(
          'ValueError',
          `${shown} is ${formatBytes(size)}; lines ${offset}-${offset + limit - 1} are not within its first ` +
            `${formatBytes(r.scannedBytes)}, too far for Read to page to; ${bash}`,
        );
      }
      return truncateHead(r.text, READ_MAX_CHARS, r.droppedChars);
    } finally {
      stream.destroy();
    }
  }

  private async write(a: z.infer<typeof WriteArgs>): Promise<string> {
    await this.sandbox.writeFile(a.file_path, a.content);
    return `Wrote ${this.display(a.file_path)} (${Buffer.byteLength(a.content, 'utf8')} bytes).`;
  }

  private async edit(a: z.infer<typeof EditArgs>): Promise<string> {
    if (a.old_string === '') throw new ToolUsageError('ValueError', 'old_string must be non-empty');
    let buf: Buffer;
    try {
      buf = await this.sandbox.readFile(a.file_path, { maxBytes: this.limits.maxFileBytes });
    } catch (err) {
      if (!(err instanceof FileTooLargeError)) throw err;
      throw new ToolUsageError(
        'ValueError',
        `${this.display(a.file_path)} is ${formatBytes(err.size)}, too large to Edit (limit ${formatBytes(this.limits.maxFileBytes)}); ` +
          'change it with Bash instead (e.g. sed -i, or a short script)',
      );
    }
    const text = buf.toString('utf8');
    // Writing back a decoded non-UTF-8 file would silently replace bytes with U+FFFD.
    if (!Buffer.from(text, 'utf8').equals(buf)) {
      throw new ToolUsageError('ValueError', `${this.display(a.file_path)} is not UTF-8 text; change it with Bash instead`);
    }
    const count = text.split(a.old_string).length - 1;
    if (count === 0) throw new ToolUsageError('ValueError', 'old_string was not found');
    if (count > 1 && !a.replace_all) {
      throw new ToolUsageError(
        'ValueError',
        `old_string matched ${count} times; set replace_all=true or use a more specific old_string`,
      );
    }
    const updated = a.replace_all
      ? text.split(a.old_string).join(a.new_string)
      : text.replace(a.old_string, () => a.new_string); // function form: no `$&` interpretation
    await this.sandbox.writeFile(a.file_path, updated);
    const changed = a.replace_all ? count : 1;
    return `Edited ${this.display(a.file_path)} (${changed} replacement${changed === 1 ? '' : 's'}).`;
  }

  private async glob(a: z.infer<typeof GlobArgs>): Promise<string> {
    const dir = a.path && a.path.trim() !== '' ? this.display(a.path) : '.';
    let pattern = a.pattern.replace(/\\/g, '/');
    // An absolute pattern under the workdir (or under the search dir) is made relative to the search dir.
    const wd = this.sandbox.workdir.replace(/\/+$/, '');
    const base = dir === '.' ? wd : `${wd}/${dir}`;
    if (pattern.startsWith(`${base}/`)) pattern = pattern.slice(base.length + 1);
    else if (dir !== '.' && pattern.startsWith(`${dir}/`)) pattern = pattern.slice(dir.length + 1);
    pattern = pattern.replace(/^\.\//, '');
    if (pattern.startsWith('/') || pattern.split('/').includes('..')) {
      throw new ToolUsageError('ValueError', 'pattern must be relative to the search directory and may not contain ..');
    }
    const { files, truncated } = await this.sandbox.listFiles(dir, GLOB_SCAN_LIMIT);
    const isMatch = picomatch(pattern);
    const prefix = dir === '.' ? '' : `${dir}/`;
    const matches = files
      .map((f) => f.path)
      .filter((p) => isMatch(prefix && p.startsWith(prefix) ? p.slice(prefix.length) : p))
      .sort();
    const note = truncated ? `\n[stopped after scanning ${GLOB_SCAN_LIMIT} files; search a smaller path]` : '';
    if (matches.length === 0) return `No files matched.${note}`;
    const shown = matches.slice(0, GLOB_MAX_FILES).join('\n');
    const more = matches.length > GLOB_MAX_FILES ? `\n... ${matches.length - GLOB_MAX_FILES} more files` : '';
    return `${shown}${more}${note}`;
  }

  /** The model's `timeout` is in seconds; values above 1000 are taken as milliseconds, like the trained harness. */
  bashTimeoutMs(a: Pick<z.infer<typeof BashArgs>, 'timeout' | 'timeout_ms'>): number {
    let ms: number;
    if (a.timeout_ms !== undefined) ms = a.timeout_ms;
    else if (a.timeout !== undefined) ms = a.timeout > 1000 ? a.timeout : a.timeout * 1000;
    else ms = this.limits.bashTimeoutMs;
    return Math.min(this.limits.bashMaxTimeoutMs, Math.max(1000, ms));
  }

  private async bash(a: z.infer<typeof BashArgs>, signal: AbortSignal | undefined): Promise<string> {
    const timeoutMs = this.bashTimeoutMs(a);
    let timer: NodeJS.Timeout | undefined;
    const watchdog = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ToolInfrastructureError(`Bash did not return ${BASH_WATCHDOG_GRACE_MS / 1000}s after its ${timeoutMs / 1000}s timeout; the sandbox is not responding`)),
        timeoutMs + BASH_WATCHDOG_GRACE_MS,
      );
    });
    let r;
    try {
      r = await Promise.race([
        this.sandbox.exec(a.command, { timeoutMs, signal, maxOutputBytes: BASH_CAPTURE_BYTES }),
        watchdog,
      ]);
    } catch (err) {
      if (err instanceof ToolInfrastructureError) throw err;
      throw new ToolInfrastructureError(`the sandbox could not run the command: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      clearTimeout(timer);
    }
    if (r.cancelled || signal?.aborted) throw new ToolAbortedError();
    const streams = `STDOUT:\n${r.stdout}\nSTDERR:\n${r.stderr}`;
    const head = r.timedOut ? `Timed out after ${(timeoutMs / 1000).toFixed(1)}s` : `Exit code: ${r.exitCode ?? -1}`;
    return truncateHead(`${head}\n${streams}`, BASH_MAX_CHARS, r.stdoutTruncated + r.stderrTruncated);
  }
}
