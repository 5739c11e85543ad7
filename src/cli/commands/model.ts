/**
 * `frognano model pull`: the published FrogNano-4B weights (Hugging Face layout) from the Hub into a directory,
 * resumable and checksummed. The directory is what vLLM / SGLang serve, and what an ONNX export starts from.
 */
import path from 'node:path';
import { parseCommandArgs } from '../args.js';
import { EXIT, UsageError } from '../exitCodes.js';
import { MODEL_HELP } from '../help.js';
import { writeLine, type CliIo } from '../io.js';
import { downloadFile } from '../model/download.js';
import { DEFAULT_MODEL_REPO, hubRepoFromEnv, listHubFiles } from '../model/hubFiles.js';
import { formatBytes, progressPrinter } from '../model/progressLine.js';

const PULL_OPTIONS = {
  dir: { type: 'string' },
  repo: { type: 'string' },
  revision: { type: 'string' },
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
  throw new UsageError(`unknown model command '${sub}' (pull)`, 'model');
}

async function pullCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('model', args, PULL_OPTIONS);
  if (values.help) {
    io.stdout.write(MODEL_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`model pull takes no positional arguments`, 'model');
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
  writeLine(io.stdout, `Serve them (GPU):  vllm serve ${dir} --served-model-name frognano-4b --max-model-len 65536 \\`);
  writeLine(
    io.stdout,
    `  --enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3 --port 8000`,
  );
  writeLine(
    io.stdout,
    `then: export FROGNANO_BACKEND=openai FROGNANO_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 FROGNANO_OPENAI_MODEL=frognano-4b`,
  );
  return EXIT.OK;
}
