import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UnrecoverableError } from 'bullmq';
import { createApprovalCheck } from '../github/checks.js';
import type { GitHubClient, InstallationAccess } from '../github/client.js';
import {
  applyPatch,
  branchNameFor,
  cloneRepo,
  commitStaged,
  DEFAULT_BOT_IDENTITY,
  pushBranch,
  stagedNumstat,
  type CloneResult,
  type GitAuth,
} from '../github/git.js';
import {
  checkGuardrails,
  labelNeedsReview,
  openDraftPullRequest,
  pullRequestTitle,
  renderPullRequestBody,
} from '../github/pullRequest.js';
import { loadRepoConfig, RepoConfigError, type RepoConfig } from '../github/repoConfig.js';
import { runningState, upsertStatusComment, type IssueRef, type StatusMeta, type StatusState } from '../github/statusComment.js';
import { defang, untrustedLine } from '../github/untrusted.js';
import { describeExit, endedInMalformedCalls, renderTrajectoryMarkdown } from '../leaf/trajectory.js';
import { getCancelRequest } from '../queue/cancel.js';
import { JobDataSchema, jobIdFor, type JobData, type JobResult } from '../queue/schema.js';
import { withJob } from '../ops/logger.js';
import { redact } from '../util/redact.js';
import { withCoAuthor } from '../github/coAuthor.js';
import { requestReview } from '../github/followUpPullRequest.js';
import { processFollowUp } from './followUp.js';
import { publishPartialWork } from './partialWork.js';
import { ProgressReporter, type RunnerProgress } from './progress.js';
import { cancelledState, runFailure, solveForJob } from './solveJob.js';
import { twoPersonRule } from './approval.js';
import { duringPhase, ownPublicReason, publicFailure } from './publicFailure.js';
import {
  abortError,
  forgetSecretLater,
  installationAccessFor,
  phaseCategory,
  throwIfAborted,
  tokenExpiresSoon,
} from './jobSupport.js';
import { HandBackError, JobFailure, type AbortCause, type JobHandle, type RunnerContext } from './types.js';

export { HandBackError, JobFailure, type AbortCause, type FailureCategory, type JobHandle, type RunnerContext } from './types.js';
export { forgetSecretLater, installationAccessFor, sandboxFor } from './jobSupport.js';

const SAFE_ID = /[^A-Za-z0-9._-]+/g;

/**
 * One job end to end: token -> status "running" -> clone -> repo config -> solve in the sandbox ->
 * apply the patch to the pristine clone -> guardrails -> commit/push -> draft PR + label + approval check.
 * The issue's status comment always ends as pull_request / no_patch / cancelled / failed, whatever throws.
 */
export async function processJob(job: JobHandle, ctx: RunnerContext, signal: AbortSignal): Promise<JobResult> {
  const parsed = JobDataSchema.safeParse(job.data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UnrecoverableError(`invalid job data: ${issue.path.join('.') || 'payload'}: ${issue.message}`);
  }
  const data = parsed.data;
  if (data.followUp) return processFollowUp(job, { ...data, followUp: data.followUp }, ctx, signal);
  const jobId = job.id ?? jobIdFor(data);
  const log = withJob(ctx.logger, jobId, { repo: `${data.owner}/${data.repo}`, issue: data.issueNumber });
  const ref: IssueRef = { owner: data.owner, repo: data.repo, issueNumber: data.issueNumber };
  const meta: StatusMeta = { attempt: data.attempt, jobId, triggeredBy: data.triggeredBy.login };
  const started = Date.now();
  const jobDir = path.join(ctx.workDir, `${jobId.replace(SAFE_ID, '_')}-${randomBytes(4).toString('hex')}`);

  let access: InstallationAccess | undefined;
  let final: StatusState | undefined;
  let reporter: ProgressReporter | undefined;
  let handBack = false;

  const setStatus = async (state: StatusState) => {
    if (!access) return;
    await upsertStatusComment(access.octokit, ctx.redis, ref, state, { ...meta, updatedAt: new Date() });
  };

  try {
    if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : abortError(signal);

    try {
      access = await installationAccessFor(ctx)(data.installationId, data.repo);
    } catch (e) {
      // Without a token we cannot even comment; the job fails with the reason recorded by BullMQ.
      throw new JobFailure(publicFailure.token(jobId), 'token', e);
    }

    const initial: RunnerProgress = { runner: ctx.runnerDescription, phase: 'starting' };
    reporter = new ProgressReporter(
      initial,
      {
        job: (p) => job.updateProgress(p).then(() => undefined),
        comment: async (p) => {
          // After `/frognano cancel` the comment keeps saying so until the run stops, instead of the latest tool call.
          await setStatus(runningState(p, await getCancelRequest(ctx.redis, jobId)));
        },
        onError: (err) => log.warn({ err }, 'progress update failed'),
      },
      ctx.progressIntervals,
    );
    reporter.update({ phase: 'cloning', detail: 'Cloning the repository.' });

    // 1. Clone the branch the job names, read the repo's config, and re-clone when it names another base.
    const auth: GitAuth = { baseUrl: ctx.gitBaseUrl, token: access.token };
    const gitOpts = { timeoutMs: ctx.gitTimeoutMs, signal };
    let clone: CloneResult;
    try {
      clone = await cloneRepo({ owner: data.owner, repo: data.repo, auth, dest: path.join(jobDir, 'repo'), branch: data.defaultBranch, ...gitOpts });
    } catch (e) {
      throwIfAborted(signal);
      throw new JobFailure(publicFailure.clone(jobId, data.defaultBranch, false), 'clone', e);
    }
    let config: RepoConfig;
    try {
      config = (await loadRepoConfig(clone.dir)).config;
    } catch (e) {
      if (e instanceof RepoConfigError) {
        throw new JobFailure(`${e.message}. Fix \`.github/frognano.yml\` on \`${clone.branch}\` and comment \`/frognano retry\`.`, 'config');
      }
      throw e;
    }
    if (config.baseBranch && config.baseBranch !== clone.branch) {
      await fs.rm(clone.dir, { recursive: true, force: true });
      try {
        clone = await cloneRepo({ owner: data.owner, repo: data.repo, auth, dest: path.join(jobDir, 'repo'), branch: config.baseBranch, ...gitOpts });
      } catch (e) {
        throwIfAborted(signal);
        throw new JobFailure(publicFailure.clone(jobId, config.baseBranch, true), 'clone', e);
      }
    }

    // 2. The agent works on a copy of the clone inside the sandbox; the clone itself stays pristine.
    const trajectoryDir = path.join(ctx.trajectoryDir, data.owner, data.repo, `issue-${data.issueNumber}-attempt-${data.attempt}`);
    log.info({ base: clone.branch, head: clone.headSha }, 'solving');
    const result = await solveForJob({ ctx, data, config, jobId, sourceDir: clone.dir, instructionsDir: clone.dir, trajectoryDir, octokit: access.octokit, reporter, signal, log });
    const t = result.trajectory;
    const runFacts = { exitReason: t.exit_reason, turns: t.n_steps, elapsedSeconds: (Date.now() - started) / 1000, trajectoryPath: result.trajectoryJsonPath };

    const cancelled = cancelledState(t, signal);
    if (cancelled) {
      final = cancelled;
      return { outcome: 'cancelled', ...runFacts };
    }
    // publishFailedAttempts: keep a run's unfinished changes on a branch before reporting how it ended.
    const unfinished = t.exit_reason !== 'agent' || endedInMalformedCalls(t);
    const partial = unfinished ? await publishPartialWork({ data, cloneDir: clone.dir, patch: result.patch, config, auth, identity: ctx.identity, what: describeExit(t), gitTimeoutMs: ctx.gitTimeoutMs, log }) : null;
    const failure = runFailure(t, jobId, partial);
    if (failure) throw failure;
    if (unfinished) {
      const reason = `No pull request: ${describeExit(t)} (\`${t.exit_reason}\`, after ${t.n_steps} turn${t.n_steps === 1 ? '' : 's'}) before the model said it was done.${partial ? ` ${partial}` : ''}`;
      final = { kind: 'no_patch', reason };
      return { outcome: 'no_patch', reason, ...runFacts };
    }
    if (!result.patch.trim()) {
      const reason = 'The model finished without changing any file.';
      final = { kind: 'no_patch', reason };
      return { outcome: 'no_patch', reason, ...runFacts };
    }

    // 3. Host side: apply to the pristine clone, judge the change by the host's own diffstat.
    reporter.update({ phase: 'publishing', detail: 'Checking and publishing the change.' });
    await applyPatch(clone.dir, result.patch, { timeoutMs: ctx.gitTimeoutMs }).catch((e: unknown) => {
      throw new JobFailure(publicFailure.patch(jobId), 'publish', e);
    });
    const files = await stagedNumstat(clone.dir);
    if (files.length === 0) {
      const reason = 'The model finished, but its changes are empty relative to the base branch.';
      final = { kind: 'no_patch', reason };
      return { outcome: 'no_patch', reason, ...runFacts };
    }
    const verdict = checkGuardrails(files, config);
    if (!verdict.ok) {
      const reason = `Refused by a guardrail: ${verdict.reason}. No branch was pushed.`;
      final = { kind: 'failed', reason };
      log.warn({ reason }, 'patch refused');
      return { outcome: 'refused', reason, ...runFacts };
    }

    // Installation tokens live one hour; a long run would push with an expired one.
    if (tokenExpiresSoon(access)) {
      log.info('installation token expires soon; minting a fresh one before publishing');
      const old = access.token;
      access = await installationAccessFor(ctx)(data.installationId, data.repo);
      auth.token = access.token;
      forgetSecretLater(old);
    }
    const branch = branchNameFor(data.issueNumber, data.attempt);
    const message = withCoAuthor(commitMessage(data, t.final_message), data.triggeredBy);
    const headSha = await commitStaged(clone.dir, { branch, message, identity: ctx.identity ?? DEFAULT_BOT_IDENTITY });
    throwIfAborted(signal);
    // Same attempt = same branch: a job handed back and run again replaces its own earlier push.
    await pushBranch(clone.dir, { owner: data.owner, repo: data.repo, branch, auth, force: true, ...gitOpts }).catch((e: unknown) => {
      throwIfAborted(signal);
      throw new JobFailure(publicFailure.push(jobId, branch), 'publish', e);
    });

    const body = renderPullRequestBody({
      issueNumber: data.issueNumber,
      summary: redact(t.final_message),
      files,
      tests: result.testResults,
      exitReason: t.exit_reason,
      exitReasonText: describeExit(t),
      limitsHit: [
        ...result.setupResults.filter((r) => r.timedOut).map((r) => `setup command \`${r.command.slice(0, 100)}\` timed out`),
        ...result.testResults.filter((r) => r.timedOut).map((r) => `test command \`${r.command.slice(0, 100)}\` timed out`),
      ],
      turns: t.n_steps,
      elapsedSeconds: runFacts.elapsedSeconds,
      model: `${t.frognano.model.model} (${t.frognano.model.backend})`,
      runner: ctx.runnerDescription,
      jobId,
      renderTrajectory: (max) => redact(renderTrajectoryMarkdown(t, max)),
    });
    const octokit: GitHubClient = access.octokit;
    const pr = await openDraftPullRequest(octokit, {
      owner: data.owner,
      repo: data.repo,
      head: branch,
      base: clone.branch,
      title: pullRequestTitle(data.title, data.issueNumber),
      body,
    }).catch((e: unknown) => {
      throw new JobFailure(publicFailure.pullRequest(jobId, branch), 'publish', e);
    });
    await labelNeedsReview(octokit, data.owner, data.repo, pr.number);
    // A second pair of eyes starts with the person who asked: GitHub puts the PR in their review queue.
    await requestReview(octokit, data.owner, data.repo, pr.number, data.triggeredBy.login).catch((err: unknown) => log.warn({ err }, 'could not request a review'));
    await createApprovalCheck(octokit, { owner: data.owner, repo: data.repo, headSha, pullRequestUrl: pr.url, issueNumber: data.issueNumber, notApprovableBy: twoPersonRule(config, data) });
    log.info({ pr: pr.url, branch, files: files.length }, 'draft pull request opened');
    final = { kind: 'pull_request', url: pr.url, number: pr.number, summary: clip(redact(t.final_message), 1500) };
    return { outcome: 'pull_request', pullRequestUrl: pr.url, pullRequestNumber: pr.number, branch, ...runFacts };
  } catch (e) {
    const cause = signal.aborted ? (signal.reason as AbortCause | undefined) : undefined;
    if (cause?.kind === 'shutdown') {
      handBack = true;
      final = { kind: 'queued' };
      throw new HandBackError();
    }
    if (cause?.kind === 'cancel') {
      final = { kind: 'cancelled', by: cause.by };
      return { outcome: 'cancelled', exitReason: 'cancelled', turns: 0, elapsedSeconds: (Date.now() - started) / 1000 };
    }
    const phase = reporter?.progress.phase;
    const failure =
      e instanceof JobFailure ? e : new JobFailure(ownPublicReason(e) ?? publicFailure.unexpected(jobId, duringPhase(phase)), phaseCategory(phase), e);
    final ??= { kind: 'failed', reason: failure.reason };
    // The whole story stays here, with the job id the public text points to.
    log.error({ err: failure.underlying ?? e, category: failure.category, phase }, `job failed: ${failure.reason}`);
    throw failure;
  } finally {
    await reporter?.close();
    const state: StatusState = final ?? { kind: 'failed', reason: publicFailure.noResult };
    try {
      await setStatus(state);
    } catch (err) {
      log.error({ err, state: state.kind }, 'could not update the status comment');
    }
    if (!handBack) log.info({ outcome: state.kind, seconds: Math.round((Date.now() - started) / 1000) }, 'job finished');
    await fs.rm(jobDir, { recursive: true, force: true }).catch(() => undefined);
    if (access) forgetSecretLater(access.token);
  }
}

/** Subject from the issue title, body from the model: both defanged (GitHub links, and closes issues on "Fixes #n", in commit messages too). */
export function commitMessage(d: JobData, finalMessage: string): string {
  const subject = `frognano: ${untrustedLine(d.title, 200)}`.slice(0, 72);
  const bodyText = defang(clip(redact(finalMessage).trim(), 4000));
  return `${subject}\n\nRefs #${d.issueNumber}. Written by the FrogNano-4B model; needs human review.\n${bodyText ? `\n${bodyText}\n` : ''}`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
