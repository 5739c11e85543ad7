import { existsSync } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { runProcess } from '../../sandbox/process.js';
import { parseCommandArgs, parseDuration, parsePositiveInt } from '../args.js';
import { CliError, EXIT, setupError, UsageError } from '../exitCodes.js';
import { EVAL_GRADE_HELP } from '../help.js';
import type { CliIo } from '../io.js';
import { pythonEnv, runStreaming } from '../python.js';
import { FILES, readOutDataset, readPredictions, readSummary, writeJsonAtomic } from './outputs.js';

/** The harness version `eval` installs into the venv it creates (its report format is the one read below). */
export const SWEBENCH_VERSION = '4.1.0';
/** FrogNano-4B's model card: SWE-bench Verified, resolved, upstream Leaf. */
export const MODEL_CARD_PERCENT = 61.5;
const MAX_REPORT_BYTES = 64 * 1024 * 1024;
const INSTALL_TIMEOUT_MS = 20 * 60_000;
const DEFAULT_GRADE_TIMEOUT_MS = 12 * 3600_000;

export const GRADE_OPTIONS = {
  python: { type: 'string' },
  venv: { type: 'string' },
  'run-id': { type: 'string' },
  report: { type: 'string' },
  'harness-workers': { type: 'string' },
  'grade-timeout': { type: 'string' },
  namespace: { type: 'string' },
} as const;

type GradeFlags = { [K in keyof typeof GRADE_OPTIONS]?: string };

const ids = z.array(z.string()).max(1_000_000);
const count = z.number().int().nonnegative();
/** The run report of swebench.harness.run_evaluation (make_run_report, schema_version 2); other keys pass. */
export const HarnessReportSchema = z.looseObject({
  total_instances: count,
  submitted_instances: count,
  completed_instances: count,
  resolved_instances: count,
  unresolved_instances: count,
  empty_patch_instances: count,
  error_instances: count,
  resolved_ids: ids,
  unresolved_ids: ids,
  empty_patch_ids: ids,
  error_ids: ids,
  schema_version: z.number().optional(),
});
export type HarnessReport = z.infer<typeof HarnessReportSchema>;

/** `frognano eval grade OUT`. */
export async function gradeCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('eval', args, {
    ...GRADE_OPTIONS,
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(EVAL_GRADE_HELP);
    return EXIT.OK;
  }
  if (positionals.length !== 1) throw new UsageError('eval grade takes the output directory of an eval run.', 'eval');
  return gradeOutDir(path.resolve(io.cwd, positionals[0]), values, io);
}

/** Grades the predictions in `out` with the official harness (or reads a report it wrote) into eval-summary.json. */
export async function gradeOutDir(out: string, flags: GradeFlags, io: CliIo): Promise<number> {
  const predictions = await readPredictions(out).catch((err: Error) => {
    throw setupError(`cannot read the predictions in ${out}: ${err.message}`);
  });
  if (predictions.size === 0) throw setupError(`no predictions in ${out}`, 'run `frognano eval --out DIR` first');
  const dataset = await readOutDataset(out);
  const model = [...predictions.values()][0].model_name_or_path;
  const runId = flags['run-id'] ?? 'frognano-eval';
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(runId)) throw new UsageError('--run-id is letters, digits, _ . - only.', 'eval');
  let reportFile: string;
  let harness: string;
  if (flags.report !== undefined) {
    reportFile = path.resolve(io.cwd, flags.report);
    harness = 'a report read with --report';
  } else {
    const python = await harnessPython(flags, io);
    reportFile = await runHarness(python.path, out, model, runId, flags, io);
    harness = `swebench ${python.version}`;
  }
  const report = await readReport(reportFile);
  const grade = gradeOf(report, dataset, { runId, harness, reportFile });
  const summary = await readSummary(out);
  await writeJsonAtomic(path.join(out, FILES.summary), { ...summary, grade });
  io.stdout.write(gradeText(grade));
  return EXIT.OK;
}

/** The report, bounded and checked: a file that is not the harness's run report says what it lacks. */
export async function readReport(file: string): Promise<HarnessReport> {
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw setupError(`the harness report ${file} does not exist`);
  if (info.size > MAX_REPORT_BYTES) throw setupError(`the harness report ${file} is larger than 64 MB`);
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw setupError(`the harness report ${file} is not JSON: ${(err as Error).message}`);
  }
  const r = HarnessReportSchema.safeParse(json);
  if (!r.success) {
    const why = r.error.issues.map((i) => `${i.path.join('.') || 'report'}: ${i.message}`).join('; ');
    throw setupError(`${file} is not a SWE-bench run report: ${why.slice(0, 500)}`);
  }
  return r.data;
}

export interface Grade {
  harness: string;
  run_id: string;
  report: string;
  resolved: number;
  total: number;
  percent: number;
  model_card_percent: number;
  unresolved: number;
  empty_patch: number;
  errors: number;
  by_repo: Record<string, { resolved: number; total: number }>;
  resolved_ids: string[];
  graded_at: string;
}

/** Resolved X of Y, Y being every instance of the output's dataset (as the harness's total_instances). */
export function gradeOf(
  report: HarnessReport,
  dataset: { instance_id: string; repo: string }[],
  how: { runId: string; harness: string; reportFile: string },
): Grade {
  const resolved = new Set(report.resolved_ids);
  const byRepo: Grade['by_repo'] = {};
  for (const i of dataset) {
    const entry = (byRepo[i.repo] ??= { resolved: 0, total: 0 });
    entry.total++;
    if (resolved.has(i.instance_id)) entry.resolved++;
  }
  const total = dataset.length || report.total_instances;
  return {
    harness: how.harness,
    run_id: how.runId,
    report: how.reportFile,
    resolved: report.resolved_instances,
    total,
    percent: total ? Math.round((1000 * report.resolved_instances) / total) / 10 : 0,
    model_card_percent: MODEL_CARD_PERCENT,
    unresolved: report.unresolved_instances,
    empty_patch: report.empty_patch_instances,
    errors: report.error_instances,
    by_repo: Object.fromEntries(Object.entries(byRepo).sort(([a], [b]) => a.localeCompare(b))),
    resolved_ids: [...resolved].sort(),
    graded_at: new Date().toISOString(),
  };
}

export function gradeText(g: Grade): string {
  const width = Math.max(10, ...Object.keys(g.by_repo).map((r) => r.length));
  const lines = [
    `Graded by ${g.harness} (run ${g.run_id}):`,
    `  resolved ${g.resolved} of ${g.total} (${g.percent.toFixed(1)}%)    model card: ${g.model_card_percent}% (SWE-bench Verified, 500 instances, upstream Leaf)`,
  ];
  if (g.total < 500)
    lines.push(`  (${g.total} instances: a subset, comparable to the card only within its sampling error)`);
  lines.push('  by repository:');
  for (const [repo, r] of Object.entries(g.by_repo))
    lines.push(`    ${repo.padEnd(width)}  ${r.resolved} of ${r.total}`);
  lines.push(`  unresolved ${g.unresolved} · empty patch ${g.empty_patch} · harness errors ${g.errors}`);
  lines.push(`  report: ${g.report}`);
  return `${lines.join('\n')}\n`;
}

async function swebenchVersion(python: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const r = await runProcess(
    [python, '-c', 'import swebench, sys; sys.stdout.write(getattr(swebench, "__version__", "?"))'],
    {
      env: pythonEnv(env),
      timeoutMs: 60_000,
    },
  ).catch(() => undefined);
  return r && r.exitCode === 0 ? r.stdout.trim() || '?' : undefined;
}

/**
 * The Python that runs the harness: --python as given (it must have swebench), else the venv (--venv, default
 * ~/.cache/frognano/swebench-VERSION), created with `pip install swebench==VERSION` when it has none.
 */
async function harnessPython(flags: GradeFlags, io: CliIo): Promise<{ path: string; version: string }> {
  if (flags.python !== undefined) {
    const version = await swebenchVersion(flags.python, io.env);
    if (!version) {
      throw setupError(
        `swebench is not installed for ${flags.python} (\`import swebench\` failed)`,
        `install it there (${flags.python} -m pip install swebench==${SWEBENCH_VERSION}), or leave out --python to let eval make a venv`,
      );
    }
    return { path: flags.python, version };
  }
  const venv = path.resolve(
    io.cwd,
    flags.venv ?? path.join(os.homedir(), '.cache', 'frognano', `swebench-${SWEBENCH_VERSION}`),
  );
  const python = path.join(venv, 'bin', 'python');
  const existing = existsSync(python) ? await swebenchVersion(python, io.env) : undefined;
  if (existing) return { path: python, version: existing };
  io.stderr.write(`frognano: installing swebench==${SWEBENCH_VERSION} into ${venv} (needs PyPI)…\n`);
  const steps = [
    ['python3', '-m', 'venv', venv],
    [python, '-m', 'pip', 'install', '--quiet', `swebench==${SWEBENCH_VERSION}`],
  ];
  for (const argv of steps) {
    const r = await runProcess(argv, { env: pythonEnv(io.env), timeoutMs: INSTALL_TIMEOUT_MS });
    if (r.exitCode !== 0) {
      throw setupError(
        `could not install swebench==${SWEBENCH_VERSION} into ${venv}: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}`,
        'without PyPI here, make a Python environment with swebench elsewhere and pass --python PATH (docs/evaluation.md)',
      );
    }
  }
  const version = await swebenchVersion(python, io.env);
  if (!version) throw setupError(`swebench was installed into ${venv} but does not import`);
  return { path: python, version };
}

/**
 * python -m swebench.harness.run_evaluation on predictions.jsonl and eval-dataset.json, in OUT/grade (it writes its
 * logs below its working directory, and its run report there: `<model with / as __>.<run_id>.json`). Its output goes
 * to stderr as it comes; it is stopped at --grade-timeout.
 */
async function runHarness(
  python: string,
  out: string,
  model: string,
  runId: string,
  flags: GradeFlags,
  io: CliIo,
): Promise<string> {
  const cwd = path.join(out, 'grade');
  await mkdir(cwd, { recursive: true });
  const workers =
    flags['harness-workers'] !== undefined ? parsePositiveInt('harness-workers', flags['harness-workers'], 'eval') : 4;
  const timeoutMs =
    flags['grade-timeout'] !== undefined
      ? parseDuration('grade-timeout', flags['grade-timeout'], 'eval')
      : DEFAULT_GRADE_TIMEOUT_MS;
  const argv = [
    '-m',
    'swebench.harness.run_evaluation',
    '--dataset_name',
    path.join(out, FILES.dataset),
    '--predictions_path',
    path.join(out, FILES.predictions),
    '--run_id',
    runId,
    '--max_workers',
    String(workers),
    '--report_dir',
    cwd,
    ...(flags.namespace !== undefined ? ['--namespace', flags.namespace] : []),
  ];
  const { code } = await runStreaming([python, ...argv], {
    cwd,
    env: pythonEnv(io.env),
    timeoutMs,
    to: io.stderr,
  });
  if (code !== 0)
    throw new CliError(
      `the SWE-bench harness failed (exit ${code ?? 'killed'})`,
      EXIT.RUNTIME,
      `its logs are in ${cwd}`,
    );
  return path.join(cwd, `${model.replace(/\//g, '__')}.${runId}.json`);
}
