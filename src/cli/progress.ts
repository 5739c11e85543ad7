import type { LeafEvent } from '../leaf/events.js';
import { formatDuration, formatTokens, oneLine } from './format.js';

export interface ProgressOptions {
  /** A terminal gets one status line rewritten in place; anything else gets plain lines. */
  tty: boolean;
  /** Terminal width for cutting the status line. */
  columns?: number;
  now?: () => number;
  /** How often the TTY line is redrawn to keep the elapsed time moving. */
  tickMs?: number;
}

const CLEAR_LINE = '\r\x1b[2K';

/**
 * Live progress of a solve run from LeafEvents: turn, running tool, tokens, elapsed time.
 * Writes to stderr (the caller's stream) so stdout stays free for --json.
 */
export class ProgressReporter {
  private readonly started: number;
  private readonly now: () => number;
  private turn = 0;
  private maxTurns = 0;
  private contextTokens = 0;
  private generatedTokens = 0;
  private activity = 'starting';
  private timer: NodeJS.Timeout | undefined;
  private lineShown = false;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly opts: ProgressOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.started = this.now();
    if (opts.tty) {
      this.timer = setInterval(() => this.redraw(), opts.tickMs ?? 1000);
      this.timer.unref();
    }
  }

  /** A step outside the Leaf loop (copying the repository, starting the sandbox, running tests). */
  phase(text: string): void {
    this.activity = text;
    if (this.opts.tty) this.redraw();
    else this.line(text);
  }

  /** A line that stays (warnings, results) even on a terminal. */
  note(text: string): void {
    if (this.opts.tty) {
      this.out.write(`${CLEAR_LINE}${text}\n`);
      this.redraw();
    } else this.line(text);
  }

  readonly onEvent = (e: LeafEvent): void => {
    switch (e.type) {
      case 'turn_start':
        this.turn = e.turn;
        this.maxTurns = e.maxTurns;
        this.contextTokens = e.promptTokens;
        this.activity = 'thinking';
        if (!this.opts.tty) this.line(`turn ${e.turn}/${e.maxTurns} · context ${formatTokens(e.promptTokens)} tokens`);
        break;
      case 'turn_end': {
        this.generatedTokens += e.completionTokens;
        this.contextTokens = e.promptTokens + e.completionTokens;
        this.activity = e.toolCalls > 0 ? `${e.toolCalls} tool call${e.toolCalls === 1 ? '' : 's'}` : 'answered';
        if (!this.opts.tty) {
          // turn_end comes after the turn's tools ran, so the line names its turn.
          const errs =
            e.parseErrors > 0 ? `, ${e.parseErrors} malformed tool call${e.parseErrors === 1 ? '' : 's'}` : '';
          const rate = e.generateMs >= 100 ? ` (${(e.completionTokens / (e.generateMs / 1000)).toFixed(1)} tok/s)` : '';
          this.line(
            `  turn ${e.turn}: generated ${formatTokens(e.completionTokens)} tokens in ${formatDuration(e.generateMs)}${rate}, ${this.activity}${errs}`,
          );
        }
        break;
      }
      case 'tool_start':
        this.activity = `${e.name} ${oneLine(e.summary, 200)}`.trim();
        if (!this.opts.tty) this.line(`  → ${this.activity}`);
        break;
      case 'tool_end':
        this.activity = `${e.name} done`;
        if (!this.opts.tty && e.isError) this.line(`  ✗ ${e.name} failed after ${formatDuration(e.elapsedMs)}`);
        break;
      case 'command_start':
        this.activity = `${e.phase} command: ${oneLine(e.command, 200)}`;
        if (!this.opts.tty) this.line(`${e.phase}: $ ${oneLine(e.command, 300)}`);
        break;
      case 'command_end': {
        const how = e.timedOut ? 'timed out' : e.exitCode === 0 ? 'passed' : `failed (exit ${e.exitCode ?? 'killed'})`;
        this.activity = `${e.phase} command ${how}`;
        if (!this.opts.tty)
          this.line(
            `${e.phase}: ${e.exitCode === 0 && !e.timedOut ? '✓' : '✗'} ${how} in ${formatDuration(e.durationMs)}`,
          );
        break;
      }
      case 'finished':
        this.activity = `finished: ${e.exitReason}`;
        this.contextTokens = e.contextTokens || this.contextTokens;
        if (!this.opts.tty) {
          this.line(
            `finished after ${e.turns} turn${e.turns === 1 ? '' : 's'}: ${e.exitReason}${e.error ? ` (${oneLine(e.error, 300)})` : ''}`,
          );
        }
        break;
    }
    if (this.opts.tty) this.redraw();
  };

  /** The current status as one line (what the TTY shows). */
  statusLine(): string {
    const parts = [
      this.turn > 0 ? `turn ${this.turn}/${this.maxTurns}` : undefined,
      this.activity,
      this.turn > 0
        ? `ctx ${formatTokens(this.contextTokens)} · gen ${formatTokens(this.generatedTokens)} tok`
        : undefined,
      formatDuration(this.now() - this.started),
    ].filter(Boolean);
    return parts.join(' │ ');
  }

  /** Stops the redraw timer and clears the status line so the summary starts on a clean line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.opts.tty && this.lineShown) this.out.write(CLEAR_LINE);
    this.lineShown = false;
  }

  private redraw(): void {
    // A pty without a size reports 0 columns.
    const width = Math.max(20, (this.opts.columns || 100) - 1);
    this.out.write(`${CLEAR_LINE}${oneLine(this.statusLine(), width)}`);
    this.lineShown = true;
  }

  private line(text: string): void {
    const t = formatDuration(this.now() - this.started);
    this.out.write(`[${t}] ${text}\n`);
  }
}
