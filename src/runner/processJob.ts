import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { UnrecoverableError } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createApprovalCheck } from '../github/checks.js';
import { createInstallationAccess, type AppCredentials, type GitHubClient, type InstallationAccess } from '../github/client.js';
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
  type Identity,
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
import { defang, untrustedLine, visibleText } from '../github/untrusted.js';
import type { ModelBackend } from '../inference/types.js';
import { DEFAULT_LIMITS, type LeafLimits } from '../leaf/limits.js';
import { solve, type SolveResult } from '../leaf/solve.js';
import { describeExit, endedInMalformedCalls, EXIT_REASON_TEXT, renderTrajectoryMarkdown } from '../leaf/trajectory.js';
import type { Sampling } from '../leaf/sampling.js';
import { getCancelRequest } from '../queue/cancel.js';
import { JobDataSchema, jobIdFor, type JobData, type JobResult } from '../queue/schema.js';
import type { SandboxConfig } from '../sandbox/config.js';
import { createSandbox } from '../sandbox/index.js';
import type { Sandbox } from '../sandbox/types.js';
import { withJob } from '../ops/logger.js';
import type { FrognanoMetrics } from '../ops/metrics.js';
import { forgetSecret, redact } from '../util/redact.js';
import { withCoAuthor } from '../github/coAuthor.js';
import { requestReview } from '../github/followUpPullRequest.js';
import { processFollowUp } from './followUp.js';
import { publishPartialWork } from './partialWork.js';
import { ProgressReporter, type RunnerProgress } from './progress.js';
import { buildTaskContext } from './taskContext.js';
import { twoPersonRule } from './approval.js';
import { duringPhase, ownPublicReason, publicFailure } from './publicFailure.js';

/** Why a job's AbortSignal fired: a maintainer's `/frognano cancel`, or the runner shutting down. */
export type AbortCause = { kind: 'cancel'; by?: string } | { kind: 'shutdown' };

/** Thrown when the runner shuts down mid-job: the worker hands the job back to the queue. */
export class HandBackError extends Error {
  constructor() {
    super('the runner is shutting down; the job goes back to the queue');
    this.name = 'HandBackError';
  }
}

/** Everything one runner process shares across jobs. */
export interface RunnerContext {
  redis: Redis;
  app: AppCredentials;
  /** Base URL of git remotes (`https://github.com`; `file:///...` in tests). */
  gitBaseUrl: string;
  backend: ModelBackend;
  sandbox: SandboxConfig;
  /** Per-job scratch space (clones); each job gets its own directory, removed afterwards. */
  workDir: string;
  /** Full trajectories are kept here: `<dir>/<owner>/<repo>/issue-<n>-attempt-<k>/`. */
  trajectoryDir: string;
  identity?: Identity;
  /** `describeRunner()` line shown in the status comment. */
  runnerDescription: string;
  logger: Logger;
  /** Runner-wide cap on turns: a repository may lower it, never raise it. */
  maxTurns?: number;
  /** Runner-wide cap on the agent's wall time. */
  wallTimeMs?: number;
  /** Overrides of upstream Leaf's eval sampling (FROGNANO_TEMPERATURE ...; src/leaf/sampling.ts). */
  sampling?: Partial<Sampling>;
  gitTimeoutMs?: number;
  /** Tests shorten these. */
  progressIntervals?: { jobEveryMs?: number; commentEveryMs?: number };
  /** Swappable for tests that exercise the real thing through a different door (never a fake GitHub). */
  createAccess?: (installationId: number, repo: string) => Promise<InstallationAccess>;
  createSandbox?: (cfg: SandboxConfig, workspaceDir: string) => Promise<Sandbox>;
  metrics?: FrognanoMetrics;
}

/** The part of a BullMQ job processJob uses (so the CLI or a test can drive it too). */
export interface JobHandle {
  id?: string;
  data: unknown;
  updateProgress(p: object): Promise<unknown>;
}

export type FailureCategory = 'token' | 'clone' | 'config' | 'model' | 'sandbox' | 'publish' | 'unexpected';

/**
 * A failure whose reason is already phrased for the issue (src/runner/publicFailure.ts: no runner internals);
 * the error behind it goes to the runner's log. UnrecoverableError so BullMQ never retries it.
 */
export class JobFailure extends UnrecoverableError {
  constructor(
    readonly reason: string,
    /** Small fixed set, used as a metrics label (a free-text reason would explode the series count). */
    readonly category: FailureCategory,
    /** What actually went wrong, for the log only. */
    readonly underlying?: unknown,
  ) {
    super(reason);
    this.name = 'JobFailure';
  }
}

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
    const limits = jobLimits(ctx, config);
    const trajectoryDir = path.join(ctx.trajectoryDir, data.owner, data.repo, `issue-${data.issueNumber}-attempt-${data.attempt}`);
    const sandboxCfg = sandboxFor(ctx.sandbox, config, jobId);
    const makeSandbox = ctx.createSandbox ?? createSandbox;
    const context = await buildTaskContext({ data, repoDir: clone.dir, config, octokit: access.octokit, log });
    reporter.update({ phase: 'solving', maxTurns: limits.maxTurns, detail: 'Preparing the sandbox.' });
    log.info({ base: clone.branch, head: clone.headSha, sandbox: sandboxCfg.kind }, 'solving');
    const result = await solve({
      sourceDir: clone.dir,
      sandboxFactory: (ws) =>
        makeSandbox(sandboxCfg, ws).catch((e: unknown) => {
          throw new JobFailure(ownPublicReason(e) ?? publicFailure.sandbox(jobId), 'sandbox', e);
        }),
      backend: ctx.backend,
      // The model reads the issue as a reader sees it: no HTML comments, no invisible characters.
      task: { title: visibleText(data.title), body: visibleText(data.body), repo: `${data.owner}/${data.repo}`, issueNumber: data.issueNumber, context },
      limits,
      sampling: ctx.sampling,
      setupCommands: config.setupCommands,
      setupNetwork: config.setup.network,
      testCommands: config.testCommands,
      outDir: trajectoryDir,
      signal,
      onEvent: (e) => {
        reporter?.onEvent(e);
        if (e.type === 'turn_end') {
          ctx.metrics?.recordModelTurn({ backend: ctx.backend.info().backend, completionTokens: e.completionTokens, elapsedMs: e.generateMs, promptTokens: e.promptTokens });
        }
      },
    });
    await scrubStoredTrajectory(result, log);
    const t = result.trajectory;
    const runFacts = { exitReason: t.exit_reason, turns: t.n_steps, elapsedSeconds: (Date.now() - started) / 1000, trajectoryPath: result.trajectoryJsonPath };

    if (t.exit_reason === 'cancelled' || signal.aborted) {
      const cause = signal.reason as AbortCause | undefined;
      if (cause?.kind === 'shutdown') throw abortError(signal);
      final = { kind: 'cancelled', by: cause?.kind === 'cancel' ? cause.by : undefined };
      return { outcome: 'cancelled', ...runFacts };
    }
    // publishFailedAttempts: keep a run's unfinished changes on a branch before reporting how it ended.
    const unfinished = t.exit_reason !== 'agent' || endedInMalformedCalls(t);
    const partial = unfinished ? await publishPartialWork({ data, cloneDir: clone.dir, patch: result.patch, config, auth, identity: ctx.identity, what: describeExit(t), gitTimeoutMs: ctx.gitTimeoutMs, log }) : null;
    if (t.exit_reason === 'llm_query_error' || t.exit_reason === 'tool_error') {
      const model = t.exit_reason === 'llm_query_error';
      const reason = model ? publicFailure.model(jobId) : publicFailure.tool(jobId);
      throw new JobFailure(partial ? `${reason}\n\n${partial}` : reason, model ? 'model' : 'sandbox', new Error(redact(t.error ?? 'no detail')));
    }
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

export function phaseCategory(phase: RunnerProgress['phase'] | undefined): FailureCategory {
  return phase === 'publishing' ? 'publish' : phase === 'solving' ? 'sandbox' : 'unexpected';
}

/** Fresh enough to clone is not fresh enough to publish: keep a margin for the push and the API calls. */
const TOKEN_MARGIN_MS = 10 * 60_000;

export function tokenExpiresSoon(access: InstallationAccess): boolean {
  const expires = Date.parse(access.expiresAt);
  return Number.isFinite(expires) && expires - Date.now() < TOKEN_MARGIN_MS;
}

/** How this runner gets an installation-authenticated client for one repository. */
export function installationAccessFor(ctx: RunnerContext): (installationId: number, repo: string) => Promise<InstallationAccess> {
  return ctx.createAccess ?? ((installationId, repo) => createInstallationAccess(ctx.app, { installationId, repo, log: ctx.logger }));
}

export function jobLimits(ctx: RunnerContext, cfg: RepoConfig): Partial<LeafLimits> {
  const cap = ctx.maxTurns ?? DEFAULT_LIMITS.maxTurns;
  const wallCap = ctx.wallTimeMs ?? DEFAULT_LIMITS.wallTimeMs;
  return {
    maxTurns: Math.min(cfg.limits.maxTurns ?? cap, cap),
    wallTimeMs: Math.min(cfg.limits.wallTimeMinutes ? cfg.limits.wallTimeMinutes * 60_000 : wallCap, wallCap),
  };
}

/** The repository may pick its docker image; the runner's isolation settings stay the runner's. */
export function sandboxFor(base: SandboxConfig, cfg: RepoConfig, jobId: string): SandboxConfig {
  const jobLabel = { 'dev.frognano.job': jobId.slice(0, 200) };
  if (base.kind === 'docker') return { ...base, image: cfg.sandboxImage ?? base.image, labels: { ...base.labels, ...jobLabel } };
  if (base.kind === 'auto') return { ...base, docker: { ...base.docker, ...(cfg.sandboxImage ? { image: cfg.sandboxImage } : {}), labels: { ...(base.docker.labels ?? {}), ...jobLabel } } };
  return base;
}

/** Subject from the issue title, body from the model: both defanged (GitHub links, and closes issues on "Fixes #n", in commit messages too). */
export function commitMessage(d: JobData, finalMessage: string): string {
  const subject = `frognano: ${untrustedLine(d.title, 200)}`.slice(0, 72);
  const bodyText = defang(clip(redact(finalMessage).trim(), 4000));
  return `${subject}\n\nRefs #${d.issueNumber}. Written by the FrogNano-4B model; needs human review.\n${bodyText ? `\n${bodyText}\n` : ''}`;
}

/** The stored trajectory must not hold the token, whatever a tool printed; solve redacts, this double-checks. */
export async function scrubStoredTrajectory(result: SolveResult, log: Logger): Promise<void> {
  for (const p of [result.trajectoryJsonPath, result.trajectoryMarkdownPath, result.patchPath]) {
    if (!p) continue;
    const text = await fs.readFile(p, 'utf8').catch(() => null);
    if (text === null) continue;
    const clean = redact(text);
    if (clean !== text) {
      log.error({ file: p }, 'a secret reached a stored trajectory file; it was redacted');
      await fs.writeFile(p, clean);
    }
  }
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError(signal);
}

export function abortError(signal: AbortSignal): Error {
  const cause = signal.reason as AbortCause | undefined;
  return new Error(cause?.kind === 'shutdown' ? 'runner shutting down' : 'cancelled');
}

function errMsg(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Tokens expire within the hour; keep redacting them a while in case a late log line mentions one. */
export function forgetSecretLater(token: string): void {
  setTimeout(() => forgetSecret(token), 2 * 60 * 60_000).unref();
}
