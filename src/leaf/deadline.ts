import { RunEnded } from './runEnded.js';
import { ToolAbortedError } from './tools.js';
import type { ExitReason } from './trajectoryFormat.js';

export interface DeadlineTimes {
  /** When the run started (Date.now()). */
  startedAt: number;
  /** The time budget, checked before each step as upstream does. */
  budgetMs: number;
  /** How long after the budget the hard stop aborts whatever is running. */
  graceMs: number;
}

/**
 * Owns the run's abort signal: a cancel from outside, or the hard stop some time after the time budget (upstream
 * checks its time budget only between steps; a job must still end). Says which exit an abort is.
 */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly onOuter = () => this.controller.abort('cancelled');
  private readonly aborted: Promise<never>;

  constructor(
    private readonly outer: AbortSignal | undefined,
    private readonly times: DeadlineTimes,
  ) {
    if (outer?.aborted) this.controller.abort('cancelled');
    else outer?.addEventListener('abort', this.onOuter, { once: true });
    this.timer = setTimeout(() => this.controller.abort('max_time'), times.budgetMs + times.graceMs);
    this.timer.unref?.();
    this.aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new ToolAbortedError());
      if (this.signal.aborted) fail();
      else this.signal.addEventListener('abort', fail, { once: true });
    });
    this.aborted.catch(() => undefined);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The exit reason of an abort. */
  reason(): ExitReason {
    return this.signal.reason === 'max_time' ? 'max_time' : 'cancelled';
  }

  /** The run's ending when it was aborted (or something stopped because of an abort). */
  ended(): RunEnded {
    return new RunEnded(this.reason());
  }

  throwIfAborted(): void {
    if (this.signal.aborted) throw this.ended();
  }

  /** Before each step: a cancel or hard stop, else the time budget (upstream checks it only here). */
  check(): void {
    this.throwIfAborted();
    if (Date.now() - this.times.startedAt >= this.times.budgetMs) throw new RunEnded('max_time');
  }

  /** Nothing the loop awaits may outlive a cancel or the hard stop. */
  guard<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.aborted]);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onOuter);
  }
}
