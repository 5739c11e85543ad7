import { CliError, EXIT, UsageError } from './exitCodes.js';
import { HELP, MAIN_HELP } from './help.js';
import { processIo, writeLine, type CliIo } from './io.js';
import { packageInfo } from '../util/packageInfo.js';
import { loadDotEnv } from '../util/dotenv.js';
import { checkSettingsOrExit } from '../util/settings.js';
import path from 'node:path';

type Command = (args: string[], io: CliIo) => Promise<number>;

/** Commands are imported when used, so `frognano replay` never loads onnxruntime or dockerode. */
const COMMANDS: Record<string, () => Promise<Command>> = {
  solve: async () => (await import('./commands/solve.js')).solveCommand,
  verify: async () => (await import('./commands/verify.js')).verifyCommand,
  doctor: async () => (await import('./commands/doctor.js')).doctorCommand,
  replay: async () => (await import('./commands/replay.js')).replayCommand,
  view: async () => (await import('./commands/view.js')).viewCommand,
  model: async () => (await import('./commands/model.js')).modelCommand,
  eval: async () => (await import('./commands/eval.js')).evalCommand,
};

/**
 * bin/frognano.js: the directory the user typed the command in (npm runs `npm run frognano` from the package root,
 * and says where it was typed in INIT_CWD), its `.env` (the environment wins, as for the app and the runner), a
 * check of the settings the CLI reads (exit code 2 and one line when one does not parse), then the command.
 */
export async function runMain(argv: string[]): Promise<number> {
  const typedIn = invocationDir(process.env, process.cwd());
  if (typedIn !== process.cwd()) process.chdir(typedIn);
  loadDotEnv(path.join(typedIn, '.env'));
  checkSettingsOrExit(process.env, 'cli', 'frognano');
  return runCli(argv, processIo());
}

/**
 * INIT_CWD only inside this package's own `frognano` script: other processes inherit INIT_CWD and
 * npm_lifecycle_event from whatever npm script started them (a test run, a user's build), where it is not ours.
 */
export function invocationDir(env: NodeJS.ProcessEnv, cwd: string): string {
  const initCwd = env.INIT_CWD?.trim();
  return env.npm_lifecycle_event === 'frognano' && initCwd && path.isAbsolute(initCwd) ? initCwd : cwd;
}

/** `frognano <command> ...` -> exit code. Never throws: every failure becomes a message and an exit code. */
export async function runCli(argv: string[], io: CliIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    (name === undefined ? io.stderr : io.stdout).write(topic && HELP[topic] ? HELP[topic] : MAIN_HELP);
    return name === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (name === '--version' || name === '-v') {
    writeLine(io.stdout, `frognano ${packageInfo().version}`);
    return EXIT.OK;
  }
  const load = COMMANDS[name];
  if (!load) {
    writeLine(io.stderr, `frognano: unknown command '${name}'.`);
    io.stderr.write(`\n${MAIN_HELP}`);
    return EXIT.USAGE;
  }
  try {
    const command = await load();
    return await command(rest, io);
  } catch (err) {
    return reportError(err, io);
  }
}

export function reportError(err: unknown, io: CliIo): number {
  if (err instanceof UsageError) {
    writeLine(io.stderr, `frognano: ${err.message}`);
    // The usage line and where the rest is; the whole help would bury the one-line error above it.
    if (err.command && HELP[err.command]) {
      writeLine(io.stderr, HELP[err.command].split('\n\n')[0]);
      writeLine(io.stderr, `Run 'frognano ${err.command} --help' for every option and examples.`);
    }
    return EXIT.USAGE;
  }
  if (err instanceof CliError) {
    writeLine(io.stderr, `frognano: ${err.message}`);
    if (err.hint) writeLine(io.stderr, `  → ${err.hint}`);
    return err.exitCode;
  }
  // Anything else is a bug or an unforeseen runtime failure: show it whole.
  writeLine(
    io.stderr,
    `frognano: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
  );
  return EXIT.RUNTIME;
}
