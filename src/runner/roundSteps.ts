import { promises as fs } from 'node:fs';
import path from 'node:path';
import { applyPatch, cloneRepo, stagedNumstat, type CloneResult, type GitAuth } from '../github/git.js';
import { checkGuardrails } from '../github/pullRequest.js';
import { loadRepoConfig, RepoConfigError, type RepoConfig } from '../github/repoConfig.js';
import { runningState, upsertStatusComment, type StatusState } from '../github/statusComment.js';
import type { SolveResult } from '../leaf/solve.js';
import { describeExit, endedInMalformedCalls } from '../leaf/trajectory.js';
import { getCancelRequest } from '../queue/cancel.js';
import type { JobData, RunnerProgress } from '../queue/schema.js';
import { forgetSecretLater, installationAccessFor, throwIfAborted, tokenExpiresSoon } from './jobSupport.js';
import { ProgressReporter } from './progress.js';
import { publicFailure } from './publicFailure.js';
import type { CheckedChange, Checkout, JobRun, LiveRun, RoundEnd, RoundVariant, RunFacts } from './roundVariant.js';
import { cancelledState, runFailure, solveForJob } from './solveJob.js';
import { JobFailure, type FailureCategory, type JobHandle } from './types.js';

/** The steps of a round, in order (src/runner/round.ts calls them); each variant's own part is a RoundVariant. */

/** A round whose model run is over: what judging it and checking its change read. */
export interface Ran<D extends JobData, C extends Checkout> {
  run: LiveRun<D>;
  variant: RoundVariant<D, C>;
  checkout: C;
  solved: SolveResult;
  facts: RunFacts;
}

/** Writes the round's status comment (nothing before the round has a token). */
export async function setStatus(run: JobRun, state: StatusState): Promise<void> {
  if (!run.access) return;
  const meta = { ...run.status.meta, updatedAt: new Date() };
  await upsertStatusComment(run.access.octokit, run.ctx.redis, run.status.ref, state, meta);
}

/**
 * Token, then the progress reporter (job progress and the status comment). `github` false (an eval round): no
 * token, and the progress goes to the job only.
 */
export async function openAccess<D extends JobData>(
  run: JobRun<D>,
  job: JobHandle,
  github = true,
): Promise<LiveRun<D>> {
  if (!github) {
    run.reporter = new ProgressReporter(
      { runner: run.ctx.runnerDescription, phase: 'starting' },
      {
        job: (p) => job.updateProgress(p).then(() => undefined),
        comment: async () => undefined,
        onError: (err) => run.log.warn({ err }, 'progress update failed'),
      },
      run.ctx.progressIntervals,
    );
    return run as LiveRun<D>;
  }
  try {
    run.access = await installationAccessFor(run.ctx)(run.data.installationId, run.data.repo);
  } catch (e) {
    // Without a token we cannot even comment; the job fails with the reason recorded by BullMQ.
    throw new JobFailure(publicFailure.token(run.jobId), 'token', e);
  }
  run.reporter = new ProgressReporter(
    { runner: run.ctx.runnerDescription, phase: 'starting' },
    {
      job: (p) => job.updateProgress(p).then(() => undefined),
      // After `/frognano cancel` the comment keeps saying so until the run stops, instead of the latest tool call.
      comment: async (p) => setStatus(run, runningState(p, await getCancelRequest(run.ctx.redis, run.jobId))),
      onError: (err) => run.log.warn({ err }, 'progress update failed'),
    },
    run.ctx.progressIntervals,
  );
  return run as LiveRun<D>;
}

/**
 * Enters a phase: the progress (and so the status comment) says so, and an error nobody phrased for the issue
 * is told by this phase (failureFor in round.ts reads it back).
 */
export async function phase<T>(
  run: LiveRun,
  name: RunnerProgress['phase'],
  detail: string,
  step: () => Promise<T>,
): Promise<T> {
  run.reporter.update({ phase: name, detail });
  return step();
}

/** A catch handler: a failure while aborting is the abort; otherwise the public `reason`, tagged `category`. */
export function rethrowAs(run: JobRun, reason: string, category: FailureCategory): (e: unknown) => never {
  return (e) => {
    throwIfAborted(run.signal);
    throw new JobFailure(reason, category, e);
  };
}

export function authFor(run: LiveRun): GitAuth {
  return { baseUrl: run.ctx.gitBaseUrl, token: run.access.token };
}

/**
 * Clones `branch` into `<jobDir>/<dest>` through the runner's git mirror when it has one (src/github/gitMirror.ts);
 * the job's token goes the same way either way. Every round kind's clone comes through here.
 */
export function cloneForRound(run: LiveRun, branch: string, dest: string): Promise<CloneResult> {
  const { data, ctx, signal } = run;
  const o = {
    owner: data.owner,
    repo: data.repo,
    auth: authFor(run),
    dest: path.join(run.jobDir, dest),
    branch,
    timeoutMs: ctx.gitTimeoutMs,
    signal,
  };
  if (!ctx.gitCache) return cloneRepo(o);
  return ctx.gitCache.clone({ ...o, installationId: data.installationId }).then((r) => {
    run.log.info({ branch, mirror: r.mirror, ...r.timings }, 'cloned through the git mirror');
    return r;
  });
}

/** Clones `branch` into `<jobDir>/<dest>`; a failure names the branch (`fromConfig`: the repo's config named it). */
export function cloneBranch(run: LiveRun, branch: string, dest: string, fromConfig = false): Promise<CloneResult> {
  return cloneForRound(run, branch, dest).catch(
    rethrowAs(run, publicFailure.clone(run.jobId, branch, fromConfig), 'clone'),
  );
}

/** The repository's `.github/frognano.yml` on `branch`; a broken one fails the round, saying how to go on. */
export async function loadConfig(dir: string, branch: string, askAgain: string): Promise<RepoConfig> {
  try {
    return (await loadRepoConfig(dir)).config;
  } catch (e) {
    if (e instanceof RepoConfigError) {
      throw new JobFailure(`${e.message}. Fix \`.github/frognano.yml\` on \`${branch}\` and ${askAgain}.`, 'config');
    }
    throw e;
  }
}

/** Removes a checkout's clone (to clone another branch in its place). */
export async function dropClone(clone: CloneResult): Promise<void> {
  await fs.rm(clone.dir, { recursive: true, force: true });
}

export async function solveInSandbox<D extends JobData, C extends Checkout>(
  run: LiveRun<D>,
  variant: RoundVariant<D, C>,
  checkout: C,
): Promise<Ran<D, C>> {
  const { ctx, data, jobId, reporter, signal, log } = run;
  const solved = variant.solve
    ? await variant.solve(run, checkout)
    : await solveForJob({
        ctx,
        data,
        config: checkout.config,
        jobId,
        reporter,
        signal,
        log,
        sourceDir: checkout.workDir,
        instructionsDir: checkout.instructionsDir,
        taskAdditions: variant.taskAdditions(data, checkout),
        trajectoryDir: variant.trajectoryDir(ctx, data),
        octokit: run.access.octokit,
      });
  run.solved = solved;
  // The round's end state (pull request, no change, failure) says what the setup commands' proxy refused.
  if (solved.blockedRequests.length) run.status.meta.blockedRequests = solved.blockedRequests;
  const t = solved.trajectory;
  const elapsedSeconds = (Date.now() - run.started) / 1000;
  const facts = {
    exitReason: t.exit_reason,
    turns: t.n_steps,
    elapsedSeconds,
    trajectoryPath: solved.trajectoryJsonPath,
  };
  return { run, variant, checkout, solved, facts };
}

/** How the run ended, before anything touches the host clone: cancelled, failed, unfinished, or no patch. */
export async function judgeRun<D extends JobData, C extends Checkout>(ran: Ran<D, C>): Promise<RoundEnd | null> {
  const { run, variant, checkout, solved, facts } = ran;
  const t = solved.trajectory;
  const cancelled = cancelledState(t, run.signal);
  if (cancelled?.kind === 'cancelled') return { outcome: 'cancelled', by: cancelled.by, facts };
  const texts = variant.texts(run.data);
  const unfinished = t.exit_reason !== 'agent' || endedInMalformedCalls(t);
  const kept = unfinished && variant.keepUnfinished ? await variant.keepUnfinished(run, checkout, solved) : null;
  const failure = runFailure(t, run.jobId, kept);
  if (failure) throw failure;
  if (unfinished) {
    const turns = `after ${t.n_steps} turn${t.n_steps === 1 ? '' : 's'}`;
    const exit = `${describeExit(t)} (\`${t.exit_reason}\`, ${turns})`;
    const reason = `${texts.unfinished}: ${exit} before the model said it was done.`;
    return nothingPublished(run, variant, 'no_patch', `${reason}${kept ? ` ${kept}` : ''}`, facts);
  }
  if (!solved.patch.trim()) return nothingPublished(run, variant, 'no_patch', texts.noFileChanged, facts);
  return null;
}

/** Host side: the patch applied to the pristine clone, judged by the host's own diffstat and the guardrails. */
export async function applyAndCheck<D extends JobData, C extends Checkout>(
  ran: Ran<D, C>,
): Promise<RoundEnd | CheckedChange> {
  const { run, variant, checkout, solved, facts } = ran;
  const texts = variant.texts(run.data);
  await applyPatch(checkout.workDir, solved.patch, { timeoutMs: run.ctx.gitTimeoutMs }).catch((e: unknown) => {
    throw new JobFailure(texts.patchFailed(run.jobId), 'publish', e);
  });
  const files = await stagedNumstat(checkout.workDir);
  if (files.length === 0) return nothingPublished(run, variant, 'no_patch', texts.emptyDiff, facts);
  const verdict = checkGuardrails(files, checkout.config);
  if (!verdict.ok) {
    const reason = `Refused by a guardrail: ${verdict.reason}. ${texts.refusedTail}`;
    run.log.warn({ reason }, 'patch refused');
    return nothingPublished(run, variant, 'refused', reason, facts);
  }
  return { solved, files, facts };
}

async function nothingPublished<D extends JobData, C extends Checkout>(
  run: LiveRun<D>,
  variant: RoundVariant<D, C>,
  outcome: 'no_patch' | 'refused',
  reason: string,
  facts: RunFacts,
): Promise<RoundEnd> {
  const note = outcome === 'refused' ? 'refused by a guardrail' : 'nothing pushed';
  await variant.nothingPublished?.(run, note);
  return { outcome, reason, facts };
}

/** Installation tokens live one hour; a long run would publish with an expired one. */
export async function refreshAccess(run: LiveRun): Promise<void> {
  if (!tokenExpiresSoon(run.access)) return;
  run.log.info('installation token expires soon; minting a fresh one before publishing');
  const old = run.access.token;
  run.access = await installationAccessFor(run.ctx)(run.data.installationId, run.data.repo);
  forgetSecretLater(old);
}
