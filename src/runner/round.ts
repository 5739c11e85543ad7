import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { StatusState } from '../github/statusComment.js';
import { withJob } from '../ops/logger.js';
import { jobIdFor, type JobData, type JobResult } from '../queue/schema.js';
import { clip } from '../util/clip.js';
import { redact } from '../util/redact.js';
import { abortError, forgetSecretLater, phaseCategory } from './jobSupport.js';
import type { RunnerProgress } from '../queue/schema.js';
import { duringPhase, ownPublicReason, publicFailure } from './publicFailure.js';
import type {
  CheckedChange,
  Checkout,
  JobRun,
  LiveRun,
  Published,
  RoundEnd,
  RoundVariant,
  RunFacts,
  Stopped,
} from './roundVariant.js';
import { reserveRunPage, storeRunPage } from './runPage.js';
import { applyAndCheck, judgeRun, openAccess, phase, refreshAccess, setStatus, solveInSandbox } from './roundSteps.js';
import { publishVerification, verifyStep } from './verifyStep.js';
import { repairAfter } from './verifyRepair.js';
import type { RepairRequest } from '../queue/verifyRepair.js';
import { verificationStatusLine } from '../github/verification.js';
import { HandBackError, JobFailure, type AbortCause, type JobHandle, type RunnerContext } from './types.js';

const SAFE_ID = /[^A-Za-z0-9._-]+/g;
const VERIFYING = 'Verifying the change in fresh sandboxes (base and base + change).';

/**
 * One round of a job, whatever its kind: access -> prepare the repository -> solve in the sandbox -> judge the run
 * -> apply and check -> verify -> fresh access -> publish (and the verification check run) -> report. The status comment always ends as pull_request /
 * no_patch / cancelled / failed (or queued again when the runner shuts down), whatever throws.
 */
export async function runRound<D extends JobData, C extends Checkout>(
  job: JobHandle,
  data: D,
  variant: RoundVariant<D, C>,
  ctx: RunnerContext,
  signal: AbortSignal,
): Promise<JobResult> {
  const run = startRun(job, data, variant, ctx, signal);
  let handBack = false;
  try {
    const end = await roundSteps(run, job, variant);
    run.final = statusFor(end);
    return resultFor(end);
  } catch (e) {
    const failure = failureFor(e, run.reporter?.progress.phase, signal, run.jobId);
    if (failure.kind === 'hand_back') {
      handBack = true;
      run.final = { kind: 'queued' };
      throw new HandBackError();
    }
    if (failure.kind === 'cancelled') {
      const end: RoundEnd = { outcome: 'cancelled', by: failure.by, facts: notStarted(run, 'cancelled') };
      run.final = statusFor(end);
      return resultFor(end);
    }
    const { error } = failure;
    run.final = { kind: 'failed', reason: error.reason };
    // The whole story stays here, with the job id the public text points to.
    const fields = { err: error.underlying ?? e, category: error.category, phase: run.reporter?.progress.phase };
    run.log.error(fields, `${variant.noun} failed: ${error.reason}`);
    throw error;
  } finally {
    await finishRun(run, variant, handBack);
  }
}

async function roundSteps<D extends JobData, C extends Checkout>(
  run: JobRun<D>,
  job: JobHandle,
  variant: RoundVariant<D, C>,
): Promise<RoundEnd> {
  if (run.signal.aborted) throw run.signal.reason instanceof Error ? run.signal.reason : abortError(run.signal);
  const live = await openAccess(run, job, variant.github !== false);
  const texts = variant.texts(run.data);
  const checkout = await phase(live, 'cloning', texts.cloning, () => variant.prepare(live));
  if ('stop' in checkout) return stopped(live, checkout);
  const ran = await solveInSandbox(live, variant, checkout);
  if (variant.conclude) return variant.conclude(live, checkout, ran.solved, ran.facts);
  await reserveRunPage(live, variant.pageKind);
  const judged = await judgeRun(ran);
  if (judged) return judged;
  const change = await phase(live, 'publishing', texts.publishing, () => applyAndCheck(ran));
  if ('outcome' in change) return change;
  if (variant.verifies !== false)
    change.verification = await phase(live, 'verifying', VERIFYING, () => verifyStep(live, checkout, change));
  if (live.page && change.verification) live.page.verification = change.verification;
  await refreshAccess(live);
  const published = await variant.publish(live, checkout, change);
  await publishVerification(live, published, change.verification);
  const repair = await repairAfter(live, checkout, change, published);
  return report(change, published, repair);
}

function startRun<D extends JobData, C extends Checkout>(
  job: JobHandle,
  data: D,
  variant: RoundVariant<D, C>,
  ctx: RunnerContext,
  signal: AbortSignal,
): JobRun<D> {
  const jobId = job.id ?? jobIdFor(data);
  const target = variant.statusTarget(data);
  return {
    jobId,
    data,
    ctx,
    signal,
    log: withJob(ctx.logger, jobId, { repo: `${data.owner}/${data.repo}`, ...variant.logFields(data) }),
    jobDir: path.join(ctx.workDir, `${jobId.replace(SAFE_ID, '_')}-${randomBytes(4).toString('hex')}`),
    started: Date.now(),
    status: { ref: target.ref, meta: { ...target.meta, jobId, triggeredBy: data.triggeredBy.login } },
  };
}

/** Progress stops, the status comment gets the final state, the scratch space and the token go. */
async function finishRun<D extends JobData, C extends Checkout>(
  run: JobRun<D>,
  variant: RoundVariant<D, C>,
  handBack: boolean,
): Promise<void> {
  await run.reporter?.close();
  const state: StatusState = run.final ?? { kind: 'failed', reason: publicFailure.noResult };
  if (run.solved && !handBack) await storeRunPage(run, run.solved, state);
  await setStatus(run, state).catch((err: unknown) =>
    run.log.error({ err, state: state.kind }, 'could not update the status comment'),
  );
  const seconds = Math.round((Date.now() - run.started) / 1000);
  if (!handBack) run.log.info({ outcome: state.kind, seconds }, `${variant.noun} finished`);
  await fs.rm(run.jobDir, { recursive: true, force: true }).catch(() => undefined);
  if (run.access) forgetSecretLater(run.access.token);
}

function notStarted(run: JobRun, exitReason: string): RunFacts {
  return { exitReason, turns: 0, elapsedSeconds: (Date.now() - run.started) / 1000 };
}

/** A round its variant stopped before the model ran. */
function stopped(run: LiveRun, s: Stopped): RoundEnd {
  return { outcome: s.stop, reason: s.reason, facts: notStarted(run, 'not_started') };
}

function report(change: CheckedChange, published: Published, repair?: RepairRequest): RoundEnd {
  const summary = clip(redact(change.solved.trajectory.final_message), 1500);
  const { url, number, branch } = published;
  const verification = change.verification ? verificationStatusLine(change.verification) : undefined;
  return {
    outcome: 'pull_request',
    url,
    number,
    branch,
    summary,
    facts: change.facts,
    ...(verification ? { verification } : {}),
    ...(repair ? { repair } : {}),
  };
}

/** The status comment a round ends with. The app maps a job result back to the same state (src/app/jobStatus.ts). */
export function statusFor(end: RoundEnd): StatusState {
  switch (end.outcome) {
    case 'pull_request':
      return {
        kind: 'pull_request',
        url: end.url,
        number: end.number,
        summary: end.summary,
        ...(end.verification ? { verification: end.verification } : {}),
      };
    case 'no_patch':
      return { kind: 'no_patch', reason: end.reason };
    case 'refused':
      return { kind: 'failed', reason: end.reason };
    case 'cancelled':
      return { kind: 'cancelled', by: end.by };
    case 'prediction':
      // Never shown (an eval round has no status comment); the state a reader of the job would expect.
      return end.status === 'error'
        ? { kind: 'failed', reason: end.reason ?? 'error' }
        : { kind: 'no_patch', reason: 'prediction stored' };
  }
}

/** The job's return value (stored by BullMQ). */
export function resultFor(end: RoundEnd): JobResult {
  switch (end.outcome) {
    case 'pull_request':
      return {
        outcome: end.outcome,
        pullRequestUrl: end.url,
        pullRequestNumber: end.number,
        branch: end.branch,
        ...end.facts,
        ...(end.repair ? { repair: end.repair } : {}),
      };
    case 'no_patch':
    case 'refused':
      return { outcome: end.outcome, reason: end.reason, ...end.facts };
    case 'cancelled':
      return { outcome: end.outcome, ...end.facts };
    case 'prediction':
      return { outcome: end.outcome, ...(end.reason ? { reason: end.reason } : {}), ...end.facts };
  }
}

export type RoundFailure =
  { kind: 'hand_back' } | { kind: 'cancelled'; by?: string } | { kind: 'failed'; error: JobFailure };

/**
 * What an error means for the round: an abort is a hand-back (shutdown) or a cancel, whatever was thrown; any other
 * error becomes a JobFailure, with its own public reason or one that names the phase it happened in.
 */
export function failureFor(
  e: unknown,
  phaseName: RunnerProgress['phase'] | undefined,
  signal: AbortSignal,
  jobId: string,
): RoundFailure {
  const cause = signal.aborted ? (signal.reason as AbortCause | undefined) : undefined;
  if (cause?.kind === 'shutdown') return { kind: 'hand_back' };
  if (cause?.kind === 'cancel') return { kind: 'cancelled', by: cause.by };
  if (e instanceof JobFailure) return { kind: 'failed', error: e };
  const reason = ownPublicReason(e) ?? publicFailure.unexpected(jobId, duringPhase(phaseName));
  return { kind: 'failed', error: new JobFailure(reason, phaseCategory(phaseName), e) };
}
