import { EXIT_REASON_TEXT, type ExitReason } from './trajectoryFormat.js';

/**
 * Every way a Leaf run ends, as mini-swe-agent's exit exceptions: thrown where the ending is found (a limit, the
 * model's last answer, a failure, a cancel) and caught in one place, `LeafRun.run`. `error` is what the trajectory's
 * `error` field says; only a model or harness failure has one.
 */
export class RunEnded extends Error {
  constructor(
    readonly exitReason: ExitReason,
    readonly error: string | null = null,
  ) {
    super(error ?? EXIT_REASON_TEXT[exitReason]);
    this.name = 'RunEnded';
  }
}
