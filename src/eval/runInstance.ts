import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { ModelBackend } from '../inference/types.js';
import type { LeafEvent } from '../leaf/events.js';
import type { LeafLimits } from '../leaf/limits.js';
import type { Sampling } from '../leaf/sampling.js';
import { solve, type SolveResult } from '../leaf/solve.js';
import type { LeafTask } from '../leaf/trajectoryFormat.js';
import { createSandbox, type DockerSandboxConfig, type Sandbox } from '../sandbox/index.js';
import type { Instance } from './instance.js';
import { copyTestbed, preflight, TESTBED } from './image.js';
import type { InstanceRecord } from './record.js';

export interface InstanceRunContext {
  docker: Docker;
  /** The docker sandbox config of the run; the image and workdir are the instance's. */
  sandboxCfg: DockerSandboxConfig;
  limits: Partial<LeafLimits>;
  sampling: Partial<Sampling>;
  toolEnv: Record<string, string>;
  /** Written to the model's ~/.bash_profile, so its login shell works in the image's environment ('' for none). */
  activation: string;
  /** Where an instance's trajectory.json goes. */
  trajectoryDir: (instanceId: string) => string;
  signal: AbortSignal;
  onEvent?: (e: LeafEvent) => void;
}

/**
 * The first user message is the bare problem statement, as the bot sends an issue: title (its first line) and body,
 * which problemStatement() joins, dedents and strips back into Harbor's SWE-bench instruction.
 */
export function taskOf(instance: Instance): LeafTask {
  const text = instance.problem_statement;
  const nl = text.indexOf('\n');
  return {
    title: nl === -1 ? text : text.slice(0, nl),
    body: nl === -1 ? '' : text.slice(nl + 1),
    repo: instance.repo,
  };
}

export type InstanceOutcome =
  | { kind: 'finished'; record: InstanceRecord; patch: string }
  | { kind: 'error'; record: InstanceRecord }
  | { kind: 'cancelled' };

function record(instance: Instance, image: string, fields: Partial<InstanceRecord>): InstanceRecord {
  return {
    instance_id: instance.instance_id,
    repo: instance.repo,
    image,
    status: 'error',
    exit_reason: null,
    error: null,
    turns: 0,
    context_tokens: 0,
    completion_tokens: 0,
    wall_sec: 0,
    patch_bytes: 0,
    finished_at: new Date().toISOString(),
    ...fields,
  };
}

/** The model's login shell sources ~/.bash_profile (HOME is the sandbox's own tmpfs): the environment goes there. */
async function withActivation(sandbox: Sandbox, activation: string): Promise<Sandbox> {
  if (!activation) return sandbox;
  const profile = `# frognano eval: the instance's environment, as SWE-bench's scripts activate it\n${activation}\n`;
  const r = await sandbox.spawn(['/bin/bash', '-c', 'cat > "$HOME/.bash_profile"'], {
    stdin: profile,
    timeoutMs: 30_000,
  });
  if (r.exitCode !== 0) {
    await sandbox.close().catch(() => undefined);
    throw new Error(`could not write the environment activation into the sandbox: ${r.stderr.trim().slice(0, 500)}`);
  }
  return sandbox;
}

/** The instance's /testbed, copied out of its image into `dir`, ready to be the workspace; or why it cannot run. */
export async function prepareInstance(
  docker: Docker,
  instance: Instance,
  image: string,
  o: { activation: string; dir: string },
): Promise<{ source: string } | { error: string }> {
  const problems = await preflight(docker, image, instance, o.activation);
  if (problems.length) return { error: `preflight: ${problems.join('; ')}` };
  return { source: await copyTestbed(docker, image, o.dir) };
}

/** What solve() needs for one instance besides its workspace and model (a runner's eval round passes its own). */
export interface InstanceSolve {
  sandboxCfg: DockerSandboxConfig;
  limits: Partial<LeafLimits>;
  sampling: Partial<Sampling>;
  toolEnv?: Record<string, string>;
  activation: string;
  outDir: string;
  signal: AbortSignal;
  onEvent?: (e: LeafEvent) => void;
}

/** solve() in a docker sandbox of the instance's image with the workspace at /testbed, the first message its problem. */
export function solveInstance(
  instance: Instance,
  image: string,
  source: string,
  backend: ModelBackend,
  o: InstanceSolve,
): Promise<SolveResult> {
  return solve({
    sourceDir: source,
    sandboxFactory: async (dir) =>
      withActivation(await createSandbox({ ...o.sandboxCfg, image, workdir: TESTBED }, dir), o.activation),
    backend,
    task: taskOf(instance),
    limits: o.limits,
    sampling: o.sampling,
    toolEnv: o.toolEnv,
    outDir: o.outDir,
    signal: o.signal,
    onEvent: o.onEvent,
    instanceId: instance.instance_id,
  });
}

/** An instance that could not run: its record, with why. */
export function errorRecord(instance: Instance, image: string, error: string, wall_sec = 0): InstanceRecord {
  return record(instance, image, { error: error.slice(0, 2000), wall_sec });
}

/**
 * One instance, as a bot round runs an issue: preflight of the image, the image's /testbed copied out as the
 * workspace, solve() in a docker sandbox of the instance's image with the workspace at /testbed, the patch taken
 * inside it against base_commit. Never throws for the instance's own failures: they are the outcome.
 */
export async function runInstance(
  instance: Instance,
  image: string,
  backend: ModelBackend,
  ctx: InstanceRunContext,
): Promise<InstanceOutcome> {
  const started = Date.now();
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-eval-'));
  try {
    const prepared = await prepareInstance(ctx.docker, instance, image, { activation: ctx.activation, dir: tmp });
    if ('error' in prepared) return { kind: 'error', record: errorRecord(instance, image, prepared.error) };
    if (ctx.signal.aborted) return { kind: 'cancelled' };
    const result = await solveInstance(instance, image, prepared.source, backend, {
      ...ctx,
      outDir: ctx.trajectoryDir(instance.instance_id),
    });
    return outcomeOf(instance, image, result, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted) return { kind: 'cancelled' };
    return {
      kind: 'error',
      record: errorRecord(instance, image, (err as Error).message, (Date.now() - started) / 1000),
    };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** What a finished solve() comes to: a prediction (with the patch) and its record, or an error record. */
export function outcomeOf(
  instance: Instance,
  image: string,
  result: SolveResult,
  signal: AbortSignal,
): InstanceOutcome {
  const t = result.trajectory;
  if (t.exit_reason === 'cancelled' || signal.aborted) return { kind: 'cancelled' };
  const fields = {
    exit_reason: t.exit_reason,
    error: t.error ? t.error.slice(0, 2000) : null,
    turns: t.n_steps,
    context_tokens: t.context_tokens,
    completion_tokens: t.frognano.total_completion_tokens,
    wall_sec: Math.round(t.elapsed_sec * 10) / 10,
    patch_bytes: Buffer.byteLength(result.patch),
  };
  // The model server failed: not the model's answer, so no prediction; a later run tries the instance again.
  if (t.exit_reason === 'llm_query_error') return { kind: 'error', record: record(instance, image, fields) };
  if (result.baseCommit !== instance.base_commit) {
    const error = `the copied /testbed is at ${result.baseCommit}, not base_commit ${instance.base_commit}`;
    return { kind: 'error', record: record(instance, image, { ...fields, error }) };
  }
  return { kind: 'finished', record: record(instance, image, { ...fields, status: 'finished' }), patch: result.patch };
}
