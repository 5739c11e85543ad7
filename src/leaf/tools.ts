import type { ToolCall } from '../inference/types.js';
import type { Sandbox } from '../sandbox/types.js';
import { PythonError, runnerTimeoutSeconds, sandboxToolScript } from './sandboxTool.js';

export { LEAF_TOOLS, TOOL_NAMES, type ToolName } from './toolSpecs.js';

/**
 * Runs Leaf tool calls. Every call, whatever the sandbox kind, is one run of the in-sandbox tool script
 * (sandboxTool.py) with the request {tool, args, workdir} on its stdin, as upstream Leaf's environment runs its
 * tool_runner.py in the task pod; the observation is the script's stdout, byte for byte what upstream's runner
 * prints (test/leaf/conformance.test.ts). The host only caps what it reads back: it never opens, stats, lists or
 * writes a path the model chose.
 */

/** Bytes read back from one runner call; far above the runner's own caps (20,000 / 30,000 characters). */
export const RUNNER_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** Largest request (arguments included) sent into the sandbox: bigger than any one model turn can write. */
export const RUNNER_MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/** How long past its own timeout a runner call may take before the sandbox counts as broken. */
const WATCHDOG_GRACE_MS = 30_000;

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

export interface ToolOutcome {
  /** What the model sees as the observation. */
  output: string;
  /** True when the call failed (an exception text, unknown tool, runner failure); a non-zero Bash exit is not. */
  isError: boolean;
  elapsedMs: number;
}

export interface ToolExecutorOptions {
  /** Environment of the runner inside the sandbox (upstream's LEAF_* limits). Never secrets: the model's commands see it. */
  runnerEnv?: Record<string, string>;
  maxOutputBytes?: number;
  maxRequestBytes?: number;
}

const NO_PYTHON = 'the sandbox has no python3, which the Leaf tools run with (runner/sandbox.Dockerfile installs it)';
/**
 * Upstream's choice of interpreter (frognano/runtimes/python.py FIND_PYTHON: /usr/bin/python3, else python3 or python
 * on PATH), then the tool script. -I: neither the repository (the working directory) nor PYTHON* variables can
 * shadow the standard library the script imports. -S: no site-packages (the script needs only the standard library),
 * which saves a few milliseconds on every tool call.
 */
const FIND_PYTHON_AND_RUN =
  'p=$(test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3 || command -v python) || ' +
  `{ echo '${NO_PYTHON}' >&2; exit 127; }; exec "$p" -I -S -c "$1"`;

const ERROR_OUTPUT =
  /^(?:[A-Z][A-Za-z]*(?:Error|Exception|Exit|Interrupt): |Unknown tool: |Tool runner exited with code |leaf tool_runner error: )/;

export class ToolExecutor {
  private readonly opts: Required<ToolExecutorOptions>;

  constructor(
    private readonly sandbox: Sandbox,
    options: ToolExecutorOptions = {},
  ) {
    this.opts = {
      runnerEnv: options.runnerEnv ?? {},
      maxOutputBytes: options.maxOutputBytes ?? RUNNER_MAX_OUTPUT_BYTES,
      maxRequestBytes: options.maxRequestBytes ?? RUNNER_MAX_REQUEST_BYTES,
    };
  }

  /**
   * The observation for one call. Model mistakes come back as text; a broken sandbox, or a Bash timeout that
   * is not a number (upstream's harness fails there too), throws ToolInfrastructureError; an abort ToolAbortedError.
   */
  async execute(call: Pick<ToolCall, 'name' | 'arguments'>, signal?: AbortSignal): Promise<ToolOutcome> {
    const started = Date.now();
    if (signal?.aborted) throw new ToolAbortedError();
    const args =
      call.arguments && typeof call.arguments === 'object' && !Array.isArray(call.arguments) ? call.arguments : {};
    let timeoutSec: number;
    try {
      timeoutSec = runnerTimeoutSeconds(call.name, args);
    } catch (err) {
      if (err instanceof PythonError) throw new ToolInfrastructureError(`${err.pythonType}: ${err.message}`);
      throw err;
    }
    const request = JSON.stringify({ tool: call.name, args, workdir: this.sandbox.workdir });
    const requestBytes = Buffer.byteLength(request, 'utf8');
    const done = (output: string): ToolOutcome => ({
      output,
      isError: ERROR_OUTPUT.test(output),
      elapsedMs: Date.now() - started,
    });
    if (requestBytes > this.opts.maxRequestBytes) {
      return done(
        `ValueError: the ${call.name} call is ${requestBytes} bytes, more than the ${this.opts.maxRequestBytes} bytes ` +
          'one tool call may carry; write the file in smaller parts',
      );
    }
    const output = await this.run(request, timeoutSec * 1000, signal);
    return done(output);
  }

  private async run(request: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const watchdog = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ToolInfrastructureError(
              `the sandbox did not answer ${WATCHDOG_GRACE_MS / 1000}s after the tool call's ${timeoutMs / 1000}s limit`,
            ),
          ),
        timeoutMs + WATCHDOG_GRACE_MS,
      );
    });
    let r;
    try {
      r = await Promise.race([
        this.sandbox.spawn(['/bin/sh', '-c', FIND_PYTHON_AND_RUN, 'frognano-leaf-tool', sandboxToolScript()], {
          stdin: request,
          timeoutMs,
          signal,
          maxOutputBytes: this.opts.maxOutputBytes,
          env: this.opts.runnerEnv,
        }),
        watchdog,
      ]);
    } catch (err) {
      if (err instanceof ToolInfrastructureError) throw err;
      if (signal?.aborted) throw new ToolAbortedError();
      throw new ToolInfrastructureError(
        `the sandbox could not run the tool: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      clearTimeout(timer);
    }
    if (r.cancelled || signal?.aborted) throw new ToolAbortedError();
    if (r.timedOut)
      throw new ToolInfrastructureError(`the tool call got no answer from the sandbox within ${timeoutMs / 1000}s`);
    if (r.exitCode === 127 && r.stderr.includes(NO_PYTHON)) throw new ToolInfrastructureError(NO_PYTHON);
    const dropped = r.stdoutTruncated + r.stderrTruncated;
    const output = `${r.stdout}${r.stderr}${dropped ? `\n[${dropped} more bytes of output were dropped]` : ''}`;
    // Upstream's words for a runner that failed (no python3 in the image, killed for memory ...).
    if (r.exitCode !== 0) return `Tool runner exited with code ${r.exitCode ?? -1}.\n${output}`;
    return output;
  }
}
