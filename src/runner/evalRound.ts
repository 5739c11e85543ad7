import path from 'node:path';
import Docker from 'dockerode';
import { defaultRepoConfig } from '../github/repoConfig.js';
import type { SolveResult } from '../leaf/solve.js';
import { errorRecord, outcomeOf, prepareInstance, solveInstance } from '../eval/runInstance.js';
import { storeEvalResult, type EvalResult } from '../queue/evalResults.js';
import type { EvalJob, JobData } from '../queue/schema.js';
import { autoCandidates, type DockerSandboxConfig } from '../sandbox/config.js';
import { jobLimits, roundListener, scrubStoredTrajectory } from './jobSupport.js';
import { publicFailure } from './publicFailure.js';
import type { Checkout, LiveRun, RoundEnd, RoundTexts, RoundVariant, RunFacts, Stopped } from './roundVariant.js';
import { cancelledState } from './solveJob.js';
import { promises as fs } from 'node:fs';

/** A job of `frognano eval --queue`: its JobData carries the instance. */
export type EvalData = JobData & { eval: EvalJob };

/** The instance's /testbed, copied out of its image; the model works on a copy of it in the image. */
interface InstanceCheckout extends Checkout {
  docker: Docker;
  sandboxCfg: DockerSandboxConfig;
}

const TEXTS: RoundTexts = {
  cloning: "Checking the instance's image and copying its /testbed.",
  publishing: 'Storing the prediction.',
  unfinished: 'No prediction',
  noFileChanged: 'The model finished without changing any file.',
  emptyDiff: 'The model finished without changing any file.',
  refusedTail: '',
  patchFailed: (jobId) => publicFailure.patch(jobId),
};
const PULL_TIMEOUT_MS = 30 * 60_000;

/**
 * A SWE-bench instance as a round (docs/evaluation.md, "On the runners' queue"): the instance's image at /testbed
 * as `frognano eval` runs it (src/eval/runInstance.ts), the bare problem statement as the task, and a prediction
 * stored in Redis for the CLI instead of a pull request. It never touches GitHub and does not verify (the harness
 * grades predictions).
 */
export const evalRound: RoundVariant<EvalData, InstanceCheckout> = {
  noun: 'eval instance',
  pageKind: 'draft',
  github: false,
  verifies: false,
  logFields: (data) => ({ instance: data.eval.instance.instance_id, tenant: data.eval.tenant }),
  statusTarget: (data) => ({
    ref: { owner: data.owner, repo: data.repo, issueNumber: data.issueNumber },
    meta: { attempt: data.attempt },
  }),
  texts: () => TEXTS,
  prepare: prepareCheckout,
  taskAdditions: () => [],
  trajectoryDir: (ctx, data) => path.join(ctx.trajectoryDir, 'eval', data.eval.runId, data.eval.instance.instance_id),
  solve: async (run, checkout) => {
    const { ctx, data } = run;
    const solved = await solveInstance(data.eval.instance, data.eval.image, checkout.workDir, ctx.backend, {
      sandboxCfg: checkout.sandboxCfg,
      limits: jobLimits(ctx, checkout.config),
      sampling: ctx.sampling ?? {},
      activation: data.eval.activation,
      outDir: evalRound.trajectoryDir(ctx, data),
      signal: run.signal,
      onEvent: roundListener(ctx, run.reporter),
    });
    await scrubStoredTrajectory(solved, run.log);
    return solved;
  },
  conclude,
  publish: () => Promise.reject(new Error('an eval round publishes nothing')),
};

/** The docker sandbox this runner runs instances in; undefined when it runs bubblewrap only. */
function dockerOf(run: LiveRun<EvalData>): DockerSandboxConfig | undefined {
  const base = run.ctx.sandbox;
  const docker = base.kind === 'docker' ? base : base.kind === 'auto' ? autoCandidates(base).docker : undefined;
  if (!docker) return undefined;
  return { ...docker, labels: { ...docker.labels, 'dev.frognano.job': run.jobId.slice(0, 200) } };
}

async function prepareCheckout(run: LiveRun<EvalData>): Promise<InstanceCheckout | Stopped> {
  const { instance, image, activation } = run.data.eval;
  const sandboxCfg = dockerOf(run);
  if (!sandboxCfg)
    return refuse(run, `this runner's sandbox is ${run.ctx.sandbox.kind}; an eval instance runs in docker`);
  const docker = new Docker(sandboxCfg.socketPath ? { socketPath: sandboxCfg.socketPath } : undefined);
  const missing = await imageMissing(docker, image);
  if (missing && !run.ctx.evalPullImages)
    return refuse(run, `image ${image} is not on this runner, and it does not pull (FROGNANO_EVAL_PULL_IMAGES=off)`);
  if (missing) {
    run.log.info({ image }, 'pulling the instance image (FROGNANO_EVAL_PULL_IMAGES=on)');
    const pulled = await pullImage(docker, image).catch((e: unknown) => (e as Error).message);
    if (pulled) return refuse(run, `could not pull ${image}: ${pulled.slice(0, 500)}`);
  }
  const dir = path.join(run.jobDir, 'instance');
  await fs.mkdir(dir, { recursive: true });
  const prepared = await prepareInstance(docker, instance, image, { activation, dir });
  if ('error' in prepared) return refuse(run, prepared.error);
  const config = defaultRepoConfig();
  return { config, docker, sandboxCfg, workDir: prepared.source, instructionsDir: prepared.source };
}

async function imageMissing(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return false;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return true;
    throw err;
  }
}

async function pullImage(docker: Docker, image: string): Promise<void> {
  const stream = (await docker.pull(image)) as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no image after ${PULL_TIMEOUT_MS / 60_000} minutes`)),
      PULL_TIMEOUT_MS,
    );
    docker.modem.followProgress(stream, (err) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    });
  });
}

/** An instance that cannot run here: its error record is stored for the CLI, and the round ends refused. */
async function refuse(run: LiveRun<EvalData>, error: string): Promise<Stopped> {
  const { instance, image } = run.data.eval;
  const wall = (Date.now() - run.started) / 1000;
  await store(run, { record: errorRecord(instance, image, error, wall), runner: run.ctx.runnerDescription });
  run.log.warn({ error }, 'eval instance cannot run on this runner');
  return { stop: 'refused', reason: error };
}

function store(run: LiveRun<EvalData>, result: EvalResult): Promise<EvalResult> {
  return storeEvalResult(run.ctx.redis, run.jobId, result);
}

/** The run's outcome as `frognano eval` judges it (outcomeOf), stored with the trajectory; a cancel stores nothing. */
async function conclude(
  run: LiveRun<EvalData>,
  _checkout: InstanceCheckout,
  solved: SolveResult,
  facts: RunFacts,
): Promise<RoundEnd> {
  const cancelled = cancelledState(solved.trajectory, run.signal);
  if (cancelled?.kind === 'cancelled') return { outcome: 'cancelled', by: cancelled.by, facts };
  const { instance, image } = run.data.eval;
  run.reporter.update({ phase: 'publishing', detail: TEXTS.publishing });
  const outcome = outcomeOf(instance, image, solved, run.signal);
  if (outcome.kind === 'cancelled') return { outcome: 'cancelled', facts };
  const trajectory = solved.trajectoryJsonPath
    ? await fs.readFile(solved.trajectoryJsonPath, 'utf8').catch(() => undefined)
    : undefined;
  const prediction =
    outcome.kind === 'finished'
      ? { instance_id: instance.instance_id, model_name_or_path: modelOf(run), model_patch: outcome.patch }
      : undefined;
  const stored = await store(run, {
    record: outcome.record,
    prediction,
    trajectory,
    runner: run.ctx.runnerDescription,
  });
  const status = stored.record.status;
  run.log.info(
    { status, exit: stored.record.exit_reason, patchBytes: stored.record.patch_bytes },
    'eval result stored',
  );
  return { outcome: 'prediction', status, ...(stored.record.error ? { reason: stored.record.error } : {}), facts };
}

/** The served model's name: predictions' model_name_or_path unless the CLI names one (--model-name). */
function modelOf(run: LiveRun<EvalData>): string {
  return run.ctx.backend.info().model || 'frognano';
}
