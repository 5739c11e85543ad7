/**
 * `frognano model pull`: the published FrogNano-4B weights (Hugging Face layout) from the Hub into a directory,
 * resumable and checksummed. The directory is what vLLM / SGLang serve, and what an ONNX export starts from.
 * `frognano model export` (and `pull --onnx`): that directory to the ONNX layout the onnx backend loads.
 */
import path from 'node:path';
import { parseCommandArgs } from '../args.js';
import { EXIT, UsageError } from '../exitCodes.js';
import { MODEL_EXPORT_HELP, MODEL_HELP } from '../help.js';
import { writeLine, type CliIo } from '../io.js';
import { downloadFile } from '../model/download.js';
import { EXPORT_OPTIONS, exportModel, parseExportDtypes } from '../model/exportRun.js';
import { DEFAULT_MODEL_REPO, hubRepoFromEnv, listHubFiles } from '../model/hubFiles.js';
import { formatBytes, progressPrinter } from '../model/progressLine.js';
import { openaiEnvLine, vllmServeLines } from '../model/serving.js';

const PULL_OPTIONS = {
  dir: { type: 'string' },
  repo: { type: 'string' },
  revision: { type: 'string' },
  onnx: { type: 'string' },
  ...EXPORT_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const;

export const DEFAULT_PULL_DIR = path.join('models', 'FrogNano-4B-2609');

export async function modelCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    (sub === undefined ? io.stderr : io.stdout).write(MODEL_HELP);
    return sub === undefined ? EXIT.USAGE : EXIT.OK;
  }
  if (sub === 'pull') return pullCommand(rest, io);
  if (sub === 'export') return exportCommand(rest, io);
  throw new UsageError(`unknown model command '${sub}' (pull, export)`, 'model');
}

async function exportCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('model', args, {
    ...EXPORT_OPTIONS,
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(MODEL_EXPORT_HELP);
    return EXIT.OK;
  }
  if (positionals.length !== 2) {
    throw new UsageError('model export takes two directories: <hf-dir> <onnx-dir>.', 'model export');
  }
  const [hfDir, onnxDir] = positionals.map((p) => path.resolve(io.cwd, p)) as [string, string];
  return exportModel(hfDir, onnxDir, values, io);
}

async function pullCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('model', args, PULL_OPTIONS);
  if (values.help) {
    io.stdout.write(MODEL_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`model pull takes no positional arguments`, 'model');
  const exportFlags = values.python ?? values.dtype ?? values.timeout;
  if (exportFlags !== undefined && values.onnx === undefined) {
    throw new UsageError('--python, --dtype and --timeout go with --onnx DIR (the export after the pull).', 'model');
  }
  if (values.onnx !== undefined) parseExportDtypes(values.dtype); // a typo fails before gigabytes are downloaded
  const hub = hubRepoFromEnv(io.env, values.repo ?? DEFAULT_MODEL_REPO, values.revision ?? 'main');
  const dir = path.resolve(io.cwd, values.dir ?? DEFAULT_PULL_DIR);
  const files = await listHubFiles(hub);
  const total = files.reduce((s, f) => s + f.size, 0);
  writeLine(
    io.stderr,
    `Pulling ${hub.repo}@${hub.revision} from ${hub.endpoint}: ${files.length} files, ${formatBytes(total)}`,
  );
  const progress = progressPrinter(io.stderr);
  let present = 0;
  for (const f of files) {
    if ((await downloadFile(hub, f, dir, progress)) === 'present') present++;
  }
  if (present > 0) writeLine(io.stderr, `  ${present} file(s) were already there and checked`);
  writeLine(io.stdout, `Model weights in ${dir} (checksums verified).`);
  if (values.onnx !== undefined) return exportModel(dir, path.resolve(io.cwd, values.onnx), values, io);
  const [first, ...more] = vllmServeLines(dir);
  writeLine(io.stdout, `Serve them (GPU):  ${first}`);
  for (const line of more) writeLine(io.stdout, line);
  writeLine(io.stdout, `then: ${openaiEnvLine()}`);
  writeLine(io.stdout, `Or run them on a CPU: frognano model export ${dir} ${dir}-onnx`);
  return EXIT.OK;
}
