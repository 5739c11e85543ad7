import type { LeafEvent } from '../leaf/events.js';
import type { RunnerProgress } from '../queue/schema.js';

export interface ProgressSinks {
  /** Cheap (Redis): job.updateProgress. */
  job(p: RunnerProgress): Promise<void>;
  /** Expensive (GitHub API, rate-limited): the status comment. */
  comment(p: RunnerProgress): Promise<void>;
  onError?(err: unknown): void;
}

/**
 * Turns the flood of LeafEvents into few writes: job progress at most every `jobEveryMs`, the status
 * comment at most every `commentEveryMs` (GitHub's secondary rate limits punish chatty edits).
 * Writes are chained, never concurrent, and `close()` waits for them, so a late "turn 7" edit can
 * never land after the final status.
 */
export class ProgressReporter {
  private current: RunnerProgress;
  private lastJob = 0;
  private lastComment = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    initial: RunnerProgress,
    private readonly sinks: ProgressSinks,
    private readonly opts: { jobEveryMs?: number; commentEveryMs?: number; now?: () => number } = {},
  ) {
    this.current = initial;
  }

  get progress(): RunnerProgress {
    return this.current;
  }

  /** Sets fields and writes both sinks now (phase changes are rare and worth showing). */
  update(p: Partial<RunnerProgress>, opts: { comment?: boolean } = {}): void {
    this.current = { ...this.current, ...p };
    this.write(true, opts.comment ?? true);
  }

  onEvent = (e: LeafEvent): void => {
    if (e.type === 'turn_start') {
      this.current = { ...this.current, phase: 'solving', turn: e.turn, maxTurns: e.maxTurns, detail: undefined };
      this.write(false, false);
    } else if (e.type === 'model_retry') {
      // The backend's own reason can name the server's internal URL: the issue only hears that it is retrying.
      const { retry, maxRetries } = e.retry;
      this.current = { ...this.current, detail: `The model server is not answering; retry ${retry} of ${maxRetries}.` };
      this.write(true, retry === 1);
    } else if (e.type === 'setup_end') {
      // Said on the status comment once, so a maintainer sees whether the round paid for its set-up.
      const detail = e.reusedKey
        ? `Set-up reused (key ${e.reusedKey.slice(0, 12)}…).`
        : `Set-up ran (${Math.max(1, Math.round(e.durationMs / 1000))} s).`;
      this.current = { ...this.current, detail };
      this.write(true, true);
    } else if (e.type === 'tool_start') {
      this.current = { ...this.current, detail: `${e.name}: ${e.summary}`.slice(0, 300) };
      this.write(false, false);
    }
  };

  private write(forceJob: boolean, forceComment: boolean): void {
    if (this.closed) return;
    const now = (this.opts.now ?? Date.now)();
    const doJob = forceJob || now - this.lastJob >= (this.opts.jobEveryMs ?? 2000);
    const doComment = forceComment || now - this.lastComment >= (this.opts.commentEveryMs ?? 30_000);
    if (!doJob && !doComment) return;
    if (doJob) this.lastJob = now;
    if (doComment) this.lastComment = now;
    const snapshot = { ...this.current };
    this.chain = this.chain.then(async () => {
      try {
        if (doJob) await this.sinks.job(snapshot);
        if (doComment) await this.sinks.comment(snapshot);
      } catch (err) {
        this.sinks.onError?.(err);
      }
    });
  }

  /** Accepts no more writes and waits until the queued ones are done (the caller writes the final status after). */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
  }
}
