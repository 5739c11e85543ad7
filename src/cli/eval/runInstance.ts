import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import type { ModelBackend } from '../../inference/types.js';
import type { LeafEvent } from '../../leaf/events.js';
import type { LeafLimits } from '../../leaf/limits.js';
import type { Sampling } from '../../leaf/sampling.js';
import { solve, type SolveResult } from '../../leaf/solve.js';
import type { LeafTask } from '../../leaf/trajectoryFormat.js';
import { createSandbox, type DockerSandboxConfig, type Sandbox } from '../../sandbox/index.js';
import type { Instance } from './dataset.js';
import { copyTestbed, preflight, TESTBED } from './image.js';
import { instanceDir, type InstanceRecord } from './outputs.js';

export interface InstanceRunContext {
  docker: Docker;
  /** The docker sandbox config of the run; the image and workdir are the instance's. */
  sandboxCfg: DockerSandboxConfig;
  limits: Partial<LeafLimits>;
  sampling: Partial<Sampling>;
  toolEnv: Record<string, string>;
  /** Written to the model's ~/.bash_profile, so its login shell works in the image's environment ('' for none). */
  activation: string;
  out: string;
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
  const problems = await preflight(ctx.docker, image, instance, ctx.activation);
  if (problems.length)
    return { kind: 'error', record: record(instance, image, { error: `preflight: ${problems.join('; ')}` }) };
  if (ctx.signal.aborted) return { kind: 'cancelled' };
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'frognano-eval-'));
  try {
    const source = await copyTestbed(ctx.docker, image, tmp);
    const result = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) =>
        withActivation(await createSandbox({ ...ctx.sandboxCfg, image, workdir: TESTBED }, dir), ctx.activation),
      backend,
      task: taskOf(instance),
      limits: ctx.limits,
      sampling: ctx.sampling,
      toolEnv: ctx.toolEnv,
      outDir: instanceDir(ctx.out, instance.instance_id),
      signal: ctx.signal,
      onEvent: ctx.onEvent,
      instanceId: instance.instance_id,
    });
    return outcomeOf(instance, image, result, ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted) return { kind: 'cancelled' };
    const wall_sec = (Date.now() - started) / 1000;
    return {
      kind: 'error',
      record: record(instance, image, { error: (err as Error).message.slice(0, 2000), wall_sec }),
    };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}

function outcomeOf(instance: Instance, image: string, result: SolveResult, signal: AbortSignal): InstanceOutcome {
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
