/**
 * The Python that runs scripts/export_onnx.py: --python, else FROGNANO_EXPORT_PYTHON, else a venv under
 * ~/.cache/frognano/export-venv that this module creates with the pinned packages of scripts/export-requirements.txt
 * (saying so first, since it downloads a few GB). Whichever it is, it must have the modules: one line names those
 * missing and the command that installs them.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { runProcess } from '../../sandbox/process.js';
import { projectDir } from '../../util/packageInfo.js';
import { setupError } from '../exitCodes.js';
import { writeLine, type CliIo } from '../io.js';
import { pythonEnv, runStreaming } from '../python.js';

/** What the exporter imports (module names), in the order the message lists them. */
export const EXPORT_MODULES = ['torch', 'transformers', 'onnx', 'onnxscript', 'onnxruntime'];
const MIN_TRANSFORMERS_MAJOR = 5;
const PROBE_TIMEOUT_MS = 60_000;
const INSTALL_TIMEOUT_MS = 60 * 60_000;

export function exporterFiles(): { script: string; requirements: string } {
  const root = projectDir() ?? process.cwd();
  return {
    script: path.join(root, 'scripts', 'export_onnx.py'),
    requirements: path.join(root, 'scripts', 'export-requirements.txt'),
  };
}

/** ~/.cache/frognano/export-venv (XDG_CACHE_HOME honoured). */
export function defaultExportVenv(env: NodeJS.ProcessEnv): string {
  const cache = env.XDG_CACHE_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.cache');
  return path.join(cache, 'frognano', 'export-venv');
}

const ProbeSchema = z.object({
  python: z.string(),
  missing: z.array(z.string()),
  transformers: z.string().nullable(),
});
const PROBE = `import importlib.util, json, sys
missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
tv = None
if "transformers" not in missing:
    from importlib.metadata import version
    tv = version("transformers")
print(json.dumps({"python": sys.version.split()[0], "missing": missing, "transformers": tv}))`;

export type ModuleCheck = { ok: true; python: string } | { ok: false; problem: string };

/** Whether `python` runs and imports what the exporter needs; never throws. */
export async function checkExportModules(python: string, env: NodeJS.ProcessEnv): Promise<ModuleCheck> {
  let r: Awaited<ReturnType<typeof runProcess>>;
  try {
    r = await runProcess([python, '-c', PROBE, ...EXPORT_MODULES], {
      env: pythonEnv(env),
      timeoutMs: PROBE_TIMEOUT_MS,
    });
  } catch (err) {
    return { ok: false, problem: `cannot run ${python}: ${(err as Error).message}` };
  }
  const parsed = r.exitCode === 0 ? ProbeSchema.safeParse(JSON.parse(r.stdout || 'null')) : undefined;
  if (!parsed?.success) {
    const why = (r.stderr || r.stdout).trim().split('\n').slice(-1)[0] ?? `exit ${r.exitCode}`;
    return { ok: false, problem: `${python} does not run as Python 3: ${why.slice(0, 200)}` };
  }
  const { missing, transformers } = parsed.data;
  if (missing.length > 0) return { ok: false, problem: `${python} lacks the Python modules ${missing.join(', ')}` };
  if (transformers && Number(transformers.split('.')[0]) < MIN_TRANSFORMERS_MAJOR) {
    return { ok: false, problem: `${python} has transformers ${transformers}; Qwen3.5 needs transformers>=5` };
  }
  return { ok: true, python: parsed.data.python };
}

function installCommand(python: string): string {
  return `${python} -m pip install -r ${exporterFiles().requirements}`;
}

/** A Python the user named: it has the modules, or the error says which are missing and how to install them. */
async function namedPython(python: string, from: string, env: NodeJS.ProcessEnv): Promise<string> {
  const check = await checkExportModules(python, env);
  if (check.ok) return python;
  throw setupError(`${check.problem} (${from})`, `install them: ${installCommand(python)}`);
}

/** Why pip failed, in one line: the network, or its own last error. */
function pipFailure(tail: string): string {
  const lines = tail.trim().split('\n');
  const last = lines.filter((l) => l.startsWith('ERROR:')).slice(-1)[0] ?? lines.slice(-1)[0] ?? '';
  const offline =
    /NewConnectionError|Failed to establish a new connection|Name or service not known|Temporary failure in name resolution|Network is unreachable|Connection refused|ConnectTimeout|ProxyError|from versions: none/.test(
      tail,
    );
  return offline
    ? `pip could not reach PyPI (${last.trim().slice(0, 200)})`
    : `pip failed: ${last.trim().slice(0, 300)}`;
}

/** The export venv, made and filled with the pinned packages when it lacks them. */
async function exportVenv(io: CliIo): Promise<string> {
  const venv = defaultExportVenv(io.env);
  const python = path.join(venv, 'bin', 'python');
  if (existsSync(python) && (await checkExportModules(python, io.env)).ok) return python;
  const { requirements } = exporterFiles();
  writeLine(
    io.stderr,
    `frognano: no --python and no FROGNANO_EXPORT_PYTHON: creating ${venv} with python3 -m venv and installing ` +
      `${EXPORT_MODULES.join(', ')} (pinned in ${requirements}) from PyPI: a few GB of downloads, once.`,
  );
  const byHand = `python3 -m venv ${venv} && ${installCommand(python)}`;
  const steps = existsSync(python)
    ? [[python, '-m', 'pip', 'install', '-r', requirements]]
    : [
        ['python3', '-m', 'venv', venv],
        [python, '-m', 'pip', 'install', '-r', requirements],
      ];
  for (const argv of steps) {
    const r = await runStreaming(argv, { env: pythonEnv(io.env), timeoutMs: INSTALL_TIMEOUT_MS, to: io.stderr }).catch(
      (err: Error) => ({ code: null, timedOut: false, tail: err.message }),
    );
    if (r.code === 0) continue;
    const what = argv[0] === 'python3' ? `python3 -m venv failed: ${r.tail.trim().slice(-300)}` : pipFailure(r.tail);
    throw setupError(
      `could not set up ${venv}: ${r.timedOut ? 'stopped after 60 minutes' : what}`,
      `run it by hand where PyPI is reachable: ${byHand}; or pass --python PATH (or set FROGNANO_EXPORT_PYTHON) to a Python that has them`,
    );
  }
  const check = await checkExportModules(python, io.env);
  if (!check.ok) throw setupError(`${check.problem} after installing into ${venv}`, `install them: ${byHand}`);
  return python;
}

/** The Python for the export, by --python, FROGNANO_EXPORT_PYTHON or the export venv, in that order. */
export async function exportPython(flag: string | undefined, io: CliIo): Promise<string> {
  if (flag !== undefined) return namedPython(flag, '--python', io.env);
  const fromEnv = io.env.FROGNANO_EXPORT_PYTHON?.trim();
  if (fromEnv) return namedPython(fromEnv, 'FROGNANO_EXPORT_PYTHON', io.env);
  return exportVenv(io);
}
