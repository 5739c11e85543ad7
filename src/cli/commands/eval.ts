import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import Docker from 'dockerode';
import type { BackendConfig } from '../../inference/index.js';
import type { ModelBackend } from '../../inference/types.js';
import { sandboxConfigFromEnv, type DockerSandboxConfig } from '../../sandbox/index.js';
import { registerSecret } from '../../util/redact.js';
import { parseCommandArgs, parsePositiveInt } from '../args.js';
import { loadDataset, selectInstances, type Instance } from '../eval/dataset.js';
import { DEFAULT_SPLIT, fetchHubDataset, isHubDatasetName } from '../eval/hubDataset.js';
import { gradeCommand, gradeOutDir, GRADE_OPTIONS } from '../eval/grade.js';
import { DEFAULT_ACTIVATION, DEFAULT_IMAGE_TEMPLATE, imageFor } from '../../eval/image.js';
import {
  FILES,
  instanceDir,
  mergeDataset,
  PredictionWriter,
  readPredictions,
  writeRecord,
  writeSummary,
} from '../eval/outputs.js';
import { EvalProgress } from '../eval/progress.js';
import { evalTenant, queueIdentity, runQueued } from '../eval/queueRun.js';
import { runInstance, type InstanceRunContext } from '../../eval/runInstance.js';
import { CliError, EXIT, setupError, UsageError } from '../exitCodes.js';
import { formatDuration, formatTokens } from '../format.js';
import { EVAL_HELP } from '../help.js';
import type { CliIo } from '../io.js';
import { onInterrupt } from '../interrupt.js';
import { backendConfigFromFlags, describeBackend, precheckBackend } from '../modelConfig.js';
import {
  closeBackend,
  limitsFromFlags,
  openBackend,
  RUN_OPTIONS,
  samplingOrUsageError,
  toolEnvFromFlags,
} from '../runOptions.js';

const OPTIONS = {
  dataset: { type: 'string' },
  split: { type: 'string' },
  instances: { type: 'string' },
  limit: { type: 'string' },
  shuffle: { type: 'boolean' },
  out: { type: 'string' },
  workers: { type: 'string' },
  'image-template': { type: 'string' },
  activate: { type: 'string' },
  'model-name': { type: 'string' },
  grade: { type: 'boolean' },
  queue: { type: 'boolean' },
  tenant: { type: 'string' },
  ...GRADE_OPTIONS,
  ...RUN_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'];

/** Upstream's eval config seeds its task order with 42; so does --shuffle without --seed. */
const DEFAULT_SHUFFLE_SEED = 42;
/** Parallel instances on one machine, at most (each is a container and, with a local model, a model copy). */
const MAX_WORKERS = 64;

/** `frognano eval`: SWE-bench-format instances through the bot's own solve(), into official-format predictions. */
export async function evalCommand(args: string[], io: CliIo): Promise<number> {
  if (args[0] === 'grade') return gradeCommand(args.slice(1), io);
  const { values, positionals } = parseCommandArgs('eval', args, OPTIONS);
  if (values.help) {
    io.stdout.write(EVAL_HELP);
    return EXIT.OK;
  }
  if (positionals.length) throw new UsageError(`eval takes no arguments, got '${positionals[0]}'.`, 'eval');
  registerSecret(io.env.FROGNANO_OPENAI_API_KEY);
  if (values.tenant !== undefined && !values.queue) throw new UsageError('--tenant goes with --queue.', 'eval');
  const { code, out } = values.queue ? await queueEval(values, io) : await localEval(values, io);
  if (code !== EXIT.OK || !values.grade) return code;
  return gradeOutDir(out, values, io);
}

async function localEval(values: Values, io: CliIo): Promise<{ code: number; out: string }> {
  const plan = await planRun(values, io);
  return { code: await runAll(plan, io), out: plan.out };
}

/** Options of the local run that mean nothing with --queue: the runners' model, sandbox and limits run the instances. */
const LOCAL_ONLY = ['workers', 'sandbox', ...Object.keys(RUN_OPTIONS).filter((k) => k !== 'seed')] as const;

/** `--queue`: the instances as jobs on the runners' queue (src/cli/eval/queueRun.ts), collected into --out. */
async function queueEval(values: Values, io: CliIo): Promise<{ code: number; out: string }> {
  const local = LOCAL_ONLY.filter((k) => (values as Record<string, unknown>)[k] !== undefined);
  if (local.length)
    throw new UsageError(
      `with --queue the runners' model, sandbox and limits run the instances; drop ${local.map((k) => `--${k}`).join(', ')}.`,
      'eval',
    );
  const p = await planInstances(values, io);
  const tenant = evalTenant(values.tenant, p.out);
  const { runId } = await queueIdentity(p.out, tenant, values.tenant !== undefined);
  const done = await readPredictions(p.out).catch((err: Error) => {
    throw setupError(`cannot resume from ${p.out}: ${err.message}`, 'use another --out, or fix the file');
  });
  const todo = p.chosen.filter((i) => !done.has(i.instance_id));
  const progress = new EvalProgress(io.stderr, todo.length, 1);
  if (todo.length < p.chosen.length)
    progress.note(`${p.chosen.length - todo.length} of ${p.chosen.length} instances already done in ${p.out}: skipped`);
  progress.note(`queueing ${todo.length} instance(s) on the runners' queue as ${tenant} (run ${runId})`);
  const interrupt = onInterrupt(progress, io, 'stopping the wait; the queued jobs keep running on the runners');
  const started = Date.now();
  const meta = { dataset: p.dataset, image_template: p.template, queue: { tenant, run_id: runId } };
  const modelName = values['model-name'];
  let outcome;
  try {
    outcome = await runQueued({
      ...{ out: p.out, todo, runId, tenant, activation: p.activation, env: io.env, progress },
      imageFor: (id) => imageFor(p.template, id),
      ...(modelName ? { modelName } : {}),
      signal: interrupt.signal,
    });
  } finally {
    interrupt.dispose();
  }
  if (outcome.overQuota && outcome.refusal) {
    const r = outcome.refusal;
    progress.note(
      `${outcome.overQuota} instance(s) not queued: ${r.tenant} is over its ${r.quota} quota (${r.used} of ${r.limit}) until ${r.resetAt.toISOString()}; run again then`,
    );
  }
  if (interrupt.interrupted)
    progress.note(
      `${outcome.left} job(s) stay queued or running on the runners; run the same command again to collect them.`,
    );
  const plan = { out: p.out, chosen: p.chosen, ids: p.ids, meta, workers: 0 };
  return { code: await report(plan, io, interrupt.interrupted, Date.now() - started), out: p.out };
}

interface Plan {
  out: string;
  chosen: Instance[];
  ids: string[];
  template: string;
  workers: number;
  backendCfg: BackendConfig;
  modelName: string;
  meta: Record<string, unknown>;
  ctx: Omit<InstanceRunContext, 'signal' | 'onEvent'>;
}

/** The usage errors of the instances' options: --dataset and --out missing, a bad --limit or --image-template. */
function checkUsage(values: Values): { template: string; limit?: number } {
  if (!values.dataset)
    throw new UsageError('eval needs --dataset FILE (.jsonl, .json or .parquet) or a Hub dataset name.', 'eval');
  if (!values.out) throw new UsageError('eval needs --out DIR (resumable: a second run skips what is done).', 'eval');
  const limit = values.limit !== undefined ? parsePositiveInt('limit', values.limit, 'eval') : undefined;
  const template = values['image-template'] ?? DEFAULT_IMAGE_TEMPLATE;
  try {
    imageFor(template, 'a__b-1');
  } catch (err) {
    throw new UsageError((err as Error).message, 'eval');
  }
  return { template, limit };
}

/** The instances of a run, local or queued, and its --out (with eval-dataset.json brought up to date). */
async function planInstances(values: Values, io: CliIo) {
  const { template, limit } = checkUsage(values);
  const ids = values.instances
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const seed = values.seed !== undefined ? Number(values.seed) : DEFAULT_SHUFFLE_SEED;
  const { dataset, files } = await datasetFiles(values, io);
  const chosen = selectInstances(await loadDataset(files), {
    ids,
    limit,
    shuffleSeed: values.shuffle ? seed : undefined,
  });
  const out = path.resolve(io.cwd, values.out!);
  await mkdir(out, { recursive: true });
  const all = await mergeDataset(out, chosen);
  const activation = values.activate ?? DEFAULT_ACTIVATION;
  return { out, chosen, ids: all.map((i) => i.instance_id), template, dataset, activation };
}

/** Everything the command line, the dataset and the machine can get wrong, before any instance runs. */
async function planRun(values: Values, io: CliIo): Promise<Plan> {
  // Every usage error before the model and the dataset are looked at.
  checkUsage(values);
  if (values.sandbox !== undefined && values.sandbox !== 'docker') {
    throw new UsageError(
      `eval runs every instance in its own docker image; --sandbox ${values.sandbox} cannot.`,
      'eval',
    );
  }
  const workers = values.workers !== undefined ? parsePositiveInt('workers', values.workers, 'eval') : 1;
  if (workers > MAX_WORKERS) throw new UsageError(`--workers is at most ${MAX_WORKERS}.`, 'eval');
  const limits = limitsFromFlags(values, 'eval');
  const sampling = samplingOrUsageError(values, 'eval');
  const toolEnv = toolEnvFromFlags(values, 'eval');
  const backendCfg = backendConfigFromFlags(values, io.env, io.cwd, 'eval');
  if (!backendCfg)
    throw setupError('no model configured', 'pass --model-dir DIR, --endpoint URL --model NAME or --replay FILE');
  await precheckBackend(backendCfg);
  const { out, chosen, ids, template, dataset, activation } = await planInstances(values, io);
  const sandboxCfg = await dockerConfig(io.env);
  const modelName = values['model-name'] ?? defaultModelName(backendCfg);
  const docker = new Docker(sandboxCfg.socketPath ? { socketPath: sandboxCfg.socketPath } : undefined);
  const meta = { model: modelName, backend: describeBackend(backendCfg), dataset, image_template: template, workers };
  return {
    out,
    chosen,
    ids,
    template,
    workers: Math.min(workers, Math.max(1, chosen.length)),
    backendCfg,
    modelName,
    meta,
    ctx: { docker, sandboxCfg, limits, sampling, toolEnv, activation, trajectoryDir: (id) => instanceDir(out, id) },
  };
}

/**
 * `--dataset`: a file here, or else a Hugging Face dataset name (owner/name) whose `--split` is downloaded into the
 * cache (src/cli/eval/hubDataset.ts). `dataset` is what the summary records.
 */
async function datasetFiles(values: Values, io: CliIo): Promise<{ dataset: string; files: string[] }> {
  const spec = values.dataset!;
  const local = path.resolve(io.cwd, spec);
  const isFile = await stat(local).then(
    (s) => s.isFile(),
    () => false,
  );
  if (isFile || !isHubDatasetName(spec)) {
    if (values.split !== undefined)
      throw new UsageError('--split applies to a Hugging Face dataset name only.', 'eval');
    return { dataset: local, files: [local] };
  }
  const split = values.split ?? DEFAULT_SPLIT;
  const note = (t: string) => io.stderr.write(`${t}\n`);
  return { dataset: `${spec} [${split}]`, files: await fetchHubDataset({ name: spec, split, env: io.env, note }) };
}

/** The docker sandbox settings of the environment (FROGNANO_SANDBOX_*), with the engine reachable. */
async function dockerConfig(env: NodeJS.ProcessEnv): Promise<DockerSandboxConfig> {
  let cfg;
  try {
    cfg = sandboxConfigFromEnv({ ...env, FROGNANO_SANDBOX: 'docker' });
  } catch (err) {
    throw setupError((err as Error).message, 'fix the FROGNANO_SANDBOX* environment variables');
  }
  if (cfg.kind !== 'docker') throw setupError('eval needs the docker sandbox');
  const docker = new Docker(cfg.socketPath ? { socketPath: cfg.socketPath } : undefined);
  try {
    await docker.ping();
  } catch (err) {
    throw setupError(`Docker engine not reachable: ${(err as Error).message}`, 'start dockerd or set DOCKER_HOST');
  }
  return cfg;
}

/** predictions.jsonl's model_name_or_path: the served model's name, the model directory's, or `replay`. */
function defaultModelName(cfg: BackendConfig): string {
  if (cfg.kind === 'openai') return cfg.model;
  if (cfg.kind === 'onnx') return path.basename(cfg.modelDir);
  return 'replay';
}

/** Instances share a worker's backend; a replay is per instance (its script starts over for each). */
class BackendPool {
  private backend: ModelBackend | undefined;
  constructor(
    private readonly cfg: BackendConfig,
    private readonly progress: EvalProgress,
  ) {}

  async get(): Promise<ModelBackend> {
    if (this.cfg.kind === 'replay') await this.close();
    const note = (t: string) => this.progress.note(t);
    this.backend ??= await openBackend(this.cfg, { phase: note, note, stop: () => undefined });
    return this.backend;
  }

  async close(): Promise<void> {
    if (this.backend) await closeBackend(this.backend);
    this.backend = undefined;
  }
}

async function runAll(plan: Plan, io: CliIo): Promise<number> {
  const done = await readPredictions(plan.out).catch((err: Error) => {
    throw setupError(`cannot resume from ${plan.out}: ${err.message}`, 'use another --out, or fix the file');
  });
  const todo = plan.chosen.filter((i) => !done.has(i.instance_id));
  const progress = new EvalProgress(io.stderr, todo.length, plan.workers);
  if (todo.length < plan.chosen.length) {
    progress.note(
      `${plan.chosen.length - todo.length} of ${plan.chosen.length} instances already done in ${plan.out}: skipped`,
    );
  }
  const interrupt = onInterrupt(progress, io, 'stopping the running instances, keeping what is done');
  const started = Date.now();
  const writer = new PredictionWriter(plan.out);
  let summaryChain = Promise.resolve();
  const summarize = () => {
    summaryChain = summaryChain.then(async () => {
      await writeSummary(plan.out, plan.ids, { ...plan.meta, updated_at: new Date().toISOString() });
    });
    return summaryChain;
  };
  const queue = [...todo];
  const worker = async () => {
    const pool = new BackendPool(plan.backendCfg, progress);
    try {
      for (let inst = queue.shift(); inst && !interrupt.signal.aborted; inst = queue.shift()) {
        await runOne(plan, inst, { pool, progress, writer, signal: interrupt.signal });
        await summarize();
      }
    } finally {
      await pool.close();
    }
  };
  try {
    await Promise.all(Array.from({ length: plan.workers }, worker));
  } finally {
    interrupt.dispose();
  }
  await summarize();
  return report(plan, io, interrupt.interrupted, Date.now() - started);
}

async function runOne(
  plan: Plan,
  inst: Instance,
  w: { pool: BackendPool; progress: EvalProgress; writer: PredictionWriter; signal: AbortSignal },
): Promise<void> {
  const started = Date.now();
  const image = imageFor(plan.template, inst.instance_id);
  w.progress.start(inst.instance_id);
  let backend: ModelBackend;
  try {
    backend = await w.pool.get();
  } catch (err) {
    w.progress.stopped();
    throw err;
  }
  const outcome = await runInstance(inst, image, backend, { ...plan.ctx, signal: w.signal });
  if (outcome.kind === 'cancelled') {
    w.progress.stopped();
    return;
  }
  // The record first: a prediction line without its record would be a finished instance the summary cannot count.
  await writeRecord(plan.out, outcome.record);
  if (outcome.kind === 'finished') {
    await w.writer.append({
      instance_id: inst.instance_id,
      model_name_or_path: plan.modelName,
      model_patch: outcome.patch,
    });
  }
  const r = outcome.record;
  const what =
    outcome.kind === 'error'
      ? `error: ${r.error ?? r.exit_reason}`
      : `${r.patch_bytes ? 'patch' : 'no patch'} (${r.exit_reason}, ${r.turns} turns, ${formatTokens(r.completion_tokens)} tokens generated)`;
  w.progress.finish(inst.instance_id, what, Date.now() - started);
}

async function report(
  plan: Pick<Plan, 'out' | 'chosen' | 'ids' | 'meta' | 'workers'>,
  io: CliIo,
  interrupted: boolean,
  ms: number,
): Promise<number> {
  const lastRun = { wall_sec: Math.round(ms / 100) / 10, workers: plan.workers, interrupted };
  const { totals } = await writeSummary(plan.out, plan.ids, {
    ...plan.meta,
    updated_at: new Date().toISOString(),
    last_run: lastRun,
  });
  const done = await readPredictions(plan.out);
  const missing = plan.chosen.filter((i) => !done.has(i.instance_id)).length;
  const lines = [
    `${interrupted ? 'Interrupted' : 'Done'} in ${formatDuration(ms)}: ${plan.chosen.length - missing} of ${plan.chosen.length} instances have a prediction` +
      ` (${plan.out} holds ${totals.finished} of ${totals.instances}: ${totals.patches} with a patch, ${totals.errors} errors).`,
    `Turns ${totals.turns} · ${formatTokens(totals.completion_tokens)} tokens generated · model time ${formatDuration(totals.wall_sec * 1000)} in total.`,
    `Results in ${plan.out}:`,
    `  predictions  ${path.join(plan.out, FILES.predictions)}`,
    `  summary      ${path.join(plan.out, FILES.summary)}`,
    `  trajectories ${path.join(plan.out, FILES.instances)}/<instance_id>/trajectory.json`,
  ];
  if (missing && !interrupted)
    lines.push(`${missing} instance(s) could not run (see the summary's errors); run again to retry them.`);
  else if (!interrupted) lines.push(`Grade with: frognano eval grade ${plan.out}`);
  io.stdout.write(`${lines.join('\n')}\n`);
  if (interrupted) return EXIT.INTERRUPTED;
  if (missing) throw new CliError(`${missing} of ${plan.chosen.length} instances could not run`, EXIT.RUNTIME);
  return EXIT.OK;
}
