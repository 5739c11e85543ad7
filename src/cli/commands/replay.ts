import { renderTrajectoryMarkdown } from '../../leaf/trajectory.js';
import { parseCommandArgs } from '../args.js';
import { EXIT, UsageError } from '../exitCodes.js';
import { REPLAY_HELP } from '../help.js';
import type { CliIo } from '../io.js';
import { loadTrajectoryFile } from '../trajectoryFile.js';
import { renderTrajectoryText } from '../trajectoryText.js';
import path from 'node:path';

const OPTIONS = {
  markdown: { type: 'boolean' },
  full: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `frognano replay <trajectory.json>`: prints a stored run readably (or as Markdown). */
export async function replayCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('replay', args, OPTIONS);
  if (values.help) {
    io.stdout.write(REPLAY_HELP);
    return EXIT.OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? 'replay needs the trajectory.json to print.'
        : `replay takes one file, got ${positionals.length}.`,
      'replay',
    );
  }
  const trajectory = await loadTrajectoryFile(path.resolve(io.cwd, positionals[0]));
  io.stdout.write(
    values.markdown
      ? renderTrajectoryMarkdown(trajectory, values.full ? Number.MAX_SAFE_INTEGER : undefined)
      : renderTrajectoryText(trajectory, { maxBlockChars: values.full ? Infinity : undefined }),
  );
  return EXIT.OK;
}
