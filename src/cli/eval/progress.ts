import { formatDuration, oneLine } from '../format.js';

/**
 * Progress of an eval run on stderr, one line per event (it runs for hours, often under nohup or in CI): which
 * instance starts, and per finished one the running count, what it did, and the ETA from this run's pace and the
 * number of workers.
 */
export class EvalProgress {
  private readonly started: number;
  private done = 0;
  private running = 0;
  private spentMs = 0;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly total: number,
    private workers: number,
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  /** How many instances run at once now (the ETA's divisor): with --queue, the runners' count, as observed. */
  parallel(n: number): void {
    this.workers = Math.max(1, n);
  }

  /** Nothing to clear: every line stays (the interface solve's progress shares). */
  stop(): void {}

  note(text: string): void {
    this.line(text);
  }

  start(id: string): void {
    this.running++;
    this.line(`start ${id} (${this.running} running)`);
  }

  /** One instance is over (`what` says how); `ms` is its wall time. */
  finish(id: string, what: string, ms: number): void {
    this.running--;
    this.done++;
    this.spentMs += ms;
    this.line(`[${this.done}/${this.total}] ${id}: ${oneLine(what, 300)} in ${formatDuration(ms)}${this.eta()}`);
  }

  /** An instance stopped by Ctrl-C: not done, not counted. */
  stopped(): void {
    this.running--;
  }

  private eta(): string {
    const left = this.total - this.done;
    if (left <= 0 || this.done === 0) return '';
    const perInstance = this.spentMs / this.done;
    return ` · ${this.running} running · ETA ${formatDuration((perInstance * left) / Math.max(1, this.workers))}`;
  }

  private line(text: string): void {
    this.out.write(`[${formatDuration(this.now() - this.started)}] ${text}\n`);
  }
}
