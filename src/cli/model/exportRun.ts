/**
 * `frognano model export` (and `model pull --onnx`): checks the Hugging Face directory, says what the export will
 * need, finds the Python, runs scripts/export_onnx.py with its progress shown and a wall-time cap, then loads the
 * result the way `frognano doctor` does (load + one generated token) and prints the settings that use it.
 */
import { readdir, statfs } from 'node:fs/promises';
import path from 'node:path';
import { BackendConfigSchema } from '../../inference/index.js';
import { parseDuration } from '../args.js';
import { formatCheck } from '../doctor/check.js';
import { formatDuration } from '../format.js';
import { checkModel } from '../doctor/model.js';
import { CliError, EXIT, setupError, UsageError } from '../exitCodes.js';
import { writeLine, type CliIo } from '../io.js';
import { pythonEnv, runStreaming } from '../python.js';
import { checkExportInput, type ExportInput } from './exportInput.js';
import { exporterFiles, exportPython } from './exportPython.js';
import { formatBytes } from './progressLine.js';
import { onnxEnvLine } from './serving.js';

export const EXPORT_DTYPES = ['fp32', 'fp16', 'q4'] as const;
export type ExportDtype = (typeof EXPORT_DTYPES)[number];
/** q4 unless told: the weight type that runs a 4B at a usable speed on a CPU (about 3 GB). */
export const DEFAULT_EXPORT_DTYPES: ExportDtype[] = ['q4'];
const DEFAULT_TIMEOUT_MS = 3 * 3600_000;
/** Bytes per parameter of each weight type's graphs (q4: 4 bits, plus a scale per block of 32, roughly). */
const BYTES_PER_PARAM: Record<ExportDtype, number> = { fp32: 4, fp16: 2, q4: 0.6 };

export interface ExportFlags {
  python?: string;
  dtype?: string[];
  timeout?: string;
}

export const EXPORT_OPTIONS = {
  python: { type: 'string' },
  dtype: { type: 'string', multiple: true },
  timeout: { type: 'string' },
} as const;

/** `--dtype q4 --dtype fp32` or `--dtype fp32,q4`, checked. */
export function parseExportDtypes(values: string[] | undefined): ExportDtype[] {
  if (!values || values.length === 0) return DEFAULT_EXPORT_DTYPES;
  const dtypes = values.flatMap((v) => v.split(',')).map((d) => d.trim());
  const bad = dtypes.filter((d) => !(EXPORT_DTYPES as readonly string[]).includes(d));
  if (bad.length > 0 || dtypes.length === 0) {
    throw new UsageError(`--dtype takes ${EXPORT_DTYPES.join(', ')} (one or more), got '${bad.join(',')}'.`, 'model');
  }
  return [...new Set(dtypes as ExportDtype[])];
}

/** The weight type the printed settings use and the check loads: the smallest one exported, fp16 last on a CPU. */
function preferredDtype(dtypes: ExportDtype[]): ExportDtype {
  return (['q4', 'fp32', 'fp16'] as const).find((d) => dtypes.includes(d))!;
}

/** 4.2 billion, 1.1 million. */
function formatCount(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(1)} billion` : `${(n / 1e6).toFixed(1)} million`;
}

/** Disk, RAM and time, estimated from the parameter count (the weights' size over their dtype's bytes). */
export function exportEstimate(input: ExportInput, dtypes: ExportDtype[]): string[] {
  const p = input.parameters;
  const fp32 = p * BYTES_PER_PARAM.fp32;
  const kept = dtypes.reduce((sum, d) => sum + p * BYTES_PER_PARAM[d], 0);
  const time = p > 1e9 ? 'tens of minutes on a CPU' : 'a minute or two';
  return [
    `  about ${formatCount(p)} parameters (${formatBytes(input.weightBytes)} of safetensors weights)`,
    `  disk: about ${formatBytes(fp32 + kept)} while it runs (the fp32 graphs, then ${dtypes.join(' + ')}); ` +
      `${formatBytes(kept)} kept`,
    `  RAM: about ${formatBytes(2 * fp32)} (twice the fp32 size: the model in PyTorch and the traced graph)`,
    `  time: ${time}`,
    `  (estimates from the parameter count, not measurements)`,
  ];
}

async function checkOutDir(out: string, input: string): Promise<void> {
  if (path.resolve(out) === path.resolve(input)) {
    throw new UsageError('the ONNX directory must not be the Hugging Face directory.', 'model');
  }
  const names = await readdir(out).catch(() => [] as string[]);
  // An export that stopped part-way leaves onnx/ with graphs only: the next run may overwrite it.
  const graphs = await readdir(path.join(out, 'onnx')).catch(() => [] as string[]);
  const unfinished = names.every((n) => n === 'onnx') && graphs.every((g) => /\.onnx([._]data)?$/.test(g));
  if (names.length > 0 && !names.includes('export.json') && !unfinished) {
    throw setupError(
      `${out} is not empty and holds no earlier export`,
      'give a new directory (an earlier export, with its export.json, is overwritten)',
    );
  }
}

async function warnIfLowDisk(out: string, needed: number, io: CliIo): Promise<void> {
  let dir = path.resolve(out);
  while (!(await statfs(dir).catch(() => undefined)) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const fs = await statfs(dir).catch(() => undefined);
  const free = fs ? fs.bavail * fs.bsize : Infinity;
  if (free < needed) writeLine(io.stderr, `  warning: only ${formatBytes(free)} free at ${dir}`);
}

/** Runs the exporter; a non-zero exit or the cap is a runtime error with its last lines. */
async function runExporter(python: string, args: string[], timeoutMs: number, io: CliIo): Promise<void> {
  const argv = [python, '-u', exporterFiles().script, ...args];
  const r = await runStreaming(argv, { env: pythonEnv(io.env), timeoutMs, to: io.stderr });
  if (r.code === 0) return;
  const last = r.tail.trim().split('\n').slice(-1)[0] ?? '';
  throw new CliError(
    r.timedOut
      ? `the export did not finish within ${formatDuration(timeoutMs)} (--timeout) and was stopped`
      : `the exporter failed (exit ${r.code ?? 'killed'}): ${last.slice(0, 300)}`,
    EXIT.RUNTIME,
    r.timedOut ? 'give it longer with --timeout (e.g. --timeout 6h)' : 'its output is above',
  );
}

/** Loads the export as the runner would and generates one token: doctor's model check. */
export async function verifyExport(out: string, dtype: string, io: CliIo): Promise<void> {
  const cfg = BackendConfigSchema.parse({ kind: 'onnx', modelDir: out, dtype });
  const result = await checkModel(cfg);
  writeLine(io.stderr, formatCheck(result, result.name.length));
  if (result.status !== 'ok') {
    throw new CliError(`the exported directory ${out} does not load`, EXIT.RUNTIME, result.hint);
  }
}

/** The whole export, from a checked input directory to the printed settings. */
export async function exportModel(hfDir: string, out: string, flags: ExportFlags, io: CliIo): Promise<number> {
  const dtypes = parseExportDtypes(flags.dtype);
  const timeoutMs = flags.timeout ? parseDuration('timeout', flags.timeout, 'model') : DEFAULT_TIMEOUT_MS;
  const input = await checkExportInput(hfDir);
  await checkOutDir(out, hfDir);
  writeLine(io.stderr, `Exporting ${hfDir} (${input.architecture}) to ONNX in ${out} as ${dtypes.join(', ')}:`);
  for (const line of exportEstimate(input, dtypes)) writeLine(io.stderr, line);
  await warnIfLowDisk(out, input.parameters * BYTES_PER_PARAM.fp32, io);
  const python = await exportPython(flags.python, io);
  writeLine(io.stderr, `Running ${exporterFiles().script} with ${python}`);
  await runExporter(python, [hfDir, out, '--dtype', dtypes.join(',')], timeoutMs, io);
  const dtype = preferredDtype(dtypes);
  await verifyExport(out, dtype, io);
  writeLine(io.stdout, `ONNX model in ${out} (${dtypes.join(', ')}; chat template from ${input.chatTemplate}).`);
  writeLine(io.stdout, `Use it:  ${onnxEnvLine(out, dtype)}`);
  writeLine(io.stdout, `then:    frognano doctor --model`);
  return EXIT.OK;
}
