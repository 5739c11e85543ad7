import type { Logger } from 'pino';
import type { GitHubClient } from '../github/client.js';
import type { RepoConfig } from '../github/repoConfig.js';
import type { StatusState } from '../github/statusComment.js';
import { visibleText } from '../github/untrusted.js';
import { solve, type SolveResult } from '../leaf/solve.js';
import type { TaskSection, Trajectory } from '../leaf/trajectory.js';
import type { JobData } from '../queue/schema.js';
import { effectiveEgressPolicy, fleetSetupNetworkFromEnv, type EgressGrant } from '../sandbox/egress/index.js';
import { createSandbox } from '../sandbox/index.js';
import { redact } from '../util/redact.js';
import { abortError, jobLimits, roundListener, sandboxFor, scrubStoredTrajectory } from './jobSupport.js';
import type { ProgressReporter } from './progress.js';
import { ownPublicReason, publicFailure } from './publicFailure.js';
import { setupSnapshotFor } from './setupSnapshot.js';
import { buildTaskContext } from './taskContext.js';
import { JobFailure, type AbortCause, type RunnerContext } from './types.js';

/**
 * The model's part of a job, alike for every kind of round (round.ts): the
 * task (the issue as a reader sees it, plus guidance, discussion, instructions and review feedback), the sandbox on a
 * copy of `sourceDir`, the Leaf loop with progress and metrics, and the stored trajectory scrubbed of secrets.
 */
export async function solveForJob(o: {
  ctx: RunnerContext;
  data: JobData;
  config: RepoConfig;
  jobId: string;
  /** The checkout the model works on (a copy of it). */
  sourceDir: string;
  /** The base branch's checkout, where repository instructions (AGENTS.md) are read from. */
  instructionsDir: string;
  trajectoryDir: string;
  /** Task sections the kind of round adds (src/runner/roundVariant.ts). */
  taskAdditions?: TaskSection[];
  octokit: GitHubClient;
  reporter: ProgressReporter;
  signal: AbortSignal;
  log: Logger;
}): Promise<SolveResult> {
  const { ctx, data, config, jobId } = o;
  const limits = jobLimits(ctx, config);
  const sandboxCfg = sandboxFor(ctx.sandbox, config, jobId);
  const makeSandbox = ctx.createSandbox ?? createSandbox;
  const context = await buildTaskContext({
    data,
    repoDir: o.instructionsDir,
    config,
    octokit: o.octokit,
    log: o.log,
    additions: o.taskAdditions,
  });
  // The checkout is the bot's clone, untouched so far: its HEAD is the base the set-up snapshot is keyed on.
  const setupSnapshot = await setupSnapshotFor(
    { ctx, data, log: o.log },
    config,
    o.sourceDir,
    undefined,
    sandboxCfg,
    'round',
  );
  o.reporter.update({ phase: 'solving', maxTurns: limits.maxTurns, detail: 'Preparing the sandbox.' });
  const result = await solve({
    sourceDir: o.sourceDir,
    sandboxFactory: (ws) =>
      makeSandbox(sandboxCfg, ws).catch((e: unknown) => {
        throw new JobFailure(ownPublicReason(e) ?? publicFailure.sandbox(jobId), 'sandbox', e);
      }),
    backend: ctx.backend,
    // The model reads the issue as a reader sees it: no HTML comments, no invisible characters.
    task: {
      title: visibleText(data.title),
      body: visibleText(data.body),
      repo: `${data.owner}/${data.repo}`,
      issueNumber: data.issueNumber,
      context,
    },
    limits,
    sampling: ctx.sampling,
    setupCommands: config.setupCommands,
    setupNetwork: setupEgress(config),
    setupSnapshot,
    testCommands: config.testCommands,
    outDir: o.trajectoryDir,
    signal: o.signal,
    onEvent: roundListener(ctx, o.reporter),
  });
  await scrubStoredTrajectory(result, o.log);
  return result;
}

/**
 * What the egress proxy of the setup commands admits: the repository's ask under the fleet's ceiling
 * (FROGNANO_SETUP_NETWORK, FROGNANO_SETUP_ALLOW); undefined: no network at all.
 */
export function setupEgress(config: RepoConfig): EgressGrant | undefined {
  const policy = effectiveEgressPolicy(config.setup.network, fleetSetupNetworkFromEnv());
  return policy ? { policy } : undefined;
}

/** A run that ended by a cancel: the state to show. A runner shutting down throws, so the job goes back to the queue. */
export function cancelledState(t: Trajectory, signal: AbortSignal): StatusState | undefined {
  if (t.exit_reason !== 'cancelled' && !signal.aborted) return undefined;
  const cause = signal.reason as AbortCause | undefined;
  if (cause?.kind === 'shutdown') throw abortError(signal);
  return { kind: 'cancelled', by: cause?.kind === 'cancel' ? cause.by : undefined };
}

/** A run the model server or the sandbox ended: the public failure (with `more` after it, when given). */
export function runFailure(t: Trajectory, jobId: string, more?: string | null): JobFailure | undefined {
  if (t.exit_reason !== 'llm_query_error' && t.exit_reason !== 'tool_error') return undefined;
  const model = t.exit_reason === 'llm_query_error';
  const reason = model ? publicFailure.model(jobId) : publicFailure.tool(jobId);
  return new JobFailure(
    more ? `${reason}\n\n${more}` : reason,
    model ? 'model' : 'sandbox',
    new Error(redact(t.error ?? 'no detail')),
  );
}
