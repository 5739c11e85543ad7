import path from 'node:path';
import { parseCommandArgs, parsePositiveInt } from '../args.js';
import { EXIT, UsageError } from '../exitCodes.js';
import { VIEW_HELP } from '../help.js';
import { writeLine, type CliIo } from '../io.js';
import { loadTrajectoryFile } from '../trajectoryFile.js';
import { startViewServer } from '../viewServer.js';

const OPTIONS = {
  port: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `frognano view <trajectory.json>`: the run page for a local run, until Ctrl-C (or `signal`) stops it. */
export async function viewCommand(args: string[], io: CliIo, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseCommandArgs('view', args, OPTIONS);
  if (values.help) {
    io.stdout.write(VIEW_HELP);
    return EXIT.OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? 'view needs the trajectory.json to show.'
        : `view takes one file, got ${positionals.length}.`,
      'view',
    );
  }
  const port = values.port === undefined ? 0 : parsePositiveInt('port', values.port, 'view');
  const trajectory = await loadTrajectoryFile(path.resolve(io.cwd, positionals[0]!));
  const server = await startViewServer(trajectory, port);
  writeLine(io.stdout, `Serving ${positionals[0]} at ${server.url}`);
  writeLine(io.stdout, 'Open it in a browser; Ctrl-C stops the server.');
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    if (signal?.aborted) return stop();
    signal?.addEventListener('abort', stop, { once: true });
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  return EXIT.OK;
}
