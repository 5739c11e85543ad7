import { EXIT } from './exitCodes.js';
import { writeLine, type CliIo } from './io.js';
import type { ProgressReporter } from './progress.js';

export interface Interrupt {
  signal: AbortSignal;
  readonly interrupted: boolean;
  dispose(): void;
}

/**
 * Ctrl-C (or SIGTERM) aborts the work through the returned signal so it can stop cleanly and write what it has
 * (`stopping` says what that is). A second one quits at once.
 */
export function onInterrupt(progress: Pick<ProgressReporter, 'note' | 'stop'>, io: CliIo, stopping: string): Interrupt {
  const controller = new AbortController();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      progress.stop();
      writeLine(io.stderr, `\nfrognano: ${signal} again — quitting without waiting.`);
      process.exit(EXIT.INTERRUPTED);
    }
    interrupted = true;
    progress.note(`Interrupted (${signal}): ${stopping}… (Ctrl-C again to quit at once)`);
    controller.abort(new Error(`interrupted by ${signal}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    get interrupted() {
      return interrupted;
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
