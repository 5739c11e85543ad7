import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { createApprovalCheck } from '../github/checks.js';
import type { InstallationAccess } from '../github/client.js';
import { withCoAuthor } from '../github/coAuthor.js';
import {
  appendRunHistory,
  getPullRequest,
  labelAwaitingReview,
  labelNeedsHuman,
  requestReview,
  setPullRequestBody,
  type HistoryEntry,
} from '../github/followUpPullRequest.js';
import {
  applyPatch,
  BOT_BRANCH_PREFIX,
  cloneRepo,
  commitStagedOnHead,
  DEFAULT_BOT_IDENTITY,
  isNonFastForward,
  pushBranch,
  stagedNumstat,
  type CloneResult,
  type GitAuth,
  type NumstatEntry,
} from '../github/git.js';
import { checkGuardrails } from '../github/pullRequest.js';
import { loadRepoConfig, RepoConfigError, type RepoConfig } from '../github/repoConfig.js';
import { runningState, upsertStatusComment, type IssueRef, type StatusMeta, type StatusState } from '../github/statusComment.js';
import { describeExit, endedInMalformedCalls } from '../leaf/trajectory.js';
import { withJob } from '../ops/logger.js';
import { getCancelRequest } from '../queue/cancel.js';
import { jobIdFor, type FollowUp, type JobData, type JobResult } from '../queue/schema.js';
import { redact } from '../util/redact.js';
import {
  forgetSecretLater,
  installationAccessFor,
  phaseCategory,
  throwIfAborted,
  tokenExpiresSoon,
} from './jobSupport.js';
import { HandBackError, JobFailure, type AbortCause, type JobHandle, type RunnerContext } from './types.js';
import { ProgressReporter } from './progress.js';
import { duringPhase, ownPublicReason, publicFailure, whereToLook } from './publicFailure.js';
import { defang } from '../github/untrusted.js';
import { cancelledState, runFailure, solveForJob } from './solveJob.js';
import { twoPersonRule } from './approval.js';

type FollowUpData = JobData & { followUp: FollowUp };

const SAFE_ID = /[^A-Za-z0-9._-]+/g;

/**
 * A follow-up round on the bot's own draft pull request: clone the PR branch at its current head (a
 * human's newer commits included), let the model address the feedback, commit on top (co-authored by
 * whoever asked), push without force, add a row to the PR's run history, and put the approval check on
 * the new head back to "waiting for a human". Progress and the result go to one status comment on the PR.
 */
export async function processFollowUp(job: JobHandle, data: FollowUpData, ctx: RunnerContext, signal: AbortSignal): Promise<JobResult> {
  const f = data.followUp;
  const jobId = job.id ?? jobIdFor(data);
  const log = withJob(ctx.logger, jobId, { repo: `${data.owner}/${data.repo}`, pr: f.pullNumber, round: f.round });
  const ref: IssueRef = { owner: data.owner, repo: data.repo, issueNumber: f.pullNumber };
  const meta: StatusMeta = { round: f.round, jobId, triggeredBy: data.triggeredBy.login };
  const started = Date.now();
  const jobDir = path.join(ctx.workDir, `${jobId.replace(SAFE_ID, '_')}-${randomBytes(4).toString('hex')}`);

  let access: InstallationAccess | undefined;
  let final: StatusState | undefined;
  let reporter: ProgressReporter | undefined;
  let handBack = false;
  const setStatus = async (state: StatusState) => {
    if (access) await upsertStatusComment(access.octokit, ctx.redis, ref, state, { ...meta, updatedAt: new Date() });
  };

  try {
    throwIfAborted(signal);
    try {
      access = await installationAccessFor(ctx)(data.installationId, data.repo);
    } catch (e) {
      throw new JobFailure(publicFailure.token(jobId), 'token', e);
    }
    reporter = new ProgressReporter(
      { runner: ctx.runnerDescription, phase: 'starting' },
      {
        job: (p) => job.updateProgress(p).then(() => undefined),
        comment: async (p) => setStatus(runningState(p, await getCancelRequest(ctx.redis, jobId))),
        onError: (err) => log.warn({ err }, 'progress update failed'),
      },
      ctx.progressIntervals,
    );
    reporter.update({ phase: 'cloning', detail: `Reading the pull request and cloning \`${f.headBranch}\`.` });

    const prepared = await prepare(data, jobId, ctx, access, jobDir, signal, log);
    if (prepared.kind === 'stop') {
      final = prepared.state;
      // The outcome maps back to the same state when the app rewrites the comment later (src/app/jobStatus.ts).
      const outcome = prepared.state.kind === 'no_patch' ? 'no_patch' : 'refused';
      return { outcome, reason: prepared.reason, exitReason: 'not_started', turns: 0, elapsedSeconds: (Date.now() - started) / 1000 };
    }
    const { config, head, prUrl } = prepared;

    const trajectoryDir = path.join(ctx.trajectoryDir, data.owner, data.repo, `pr-${f.pullNumber}-round-${f.round}`);
    log.info({ head: head.headSha, requestedHead: f.headSha }, 'follow-up: solving');
    const result = await solveForJob({
      ctx, data, config, jobId, sourceDir: head.dir, instructionsDir: prepared.baseDir, trajectoryDir, octokit: access.octokit, reporter, signal, log,
    });
    const t = result.trajectory;
    const runFacts = { exitReason: t.exit_reason, turns: t.n_steps, elapsedSeconds: (Date.now() - started) / 1000, trajectoryPath: result.trajectoryJsonPath };

    const cancelled = cancelledState(t, signal);
    if (cancelled) {
      final = cancelled;
      return { outcome: 'cancelled', ...runFacts };
    }
    const failure = runFailure(t, jobId);
    if (failure) throw failure;
    const octokit = access.octokit;
    const history = (headSha: string | null, result: string) =>
      recordRound(octokit, data, { round: `Follow-up ${f.round}`, trigger: `${f.source} by ${data.triggeredBy.login}`, headSha, result });
    const noChange = async (reason: string): Promise<JobResult> => {
      final = { kind: 'no_patch', reason };
      await history(null, 'nothing pushed').catch((err: unknown) => log.warn({ err }, 'could not update the run history'));
      return { outcome: 'no_patch', reason, ...runFacts };
    };
    if (t.exit_reason !== 'agent' || endedInMalformedCalls(t)) {
      return noChange(`Nothing pushed: ${describeExit(t)} (\`${t.exit_reason}\`, after ${t.n_steps} turn${t.n_steps === 1 ? '' : 's'}) before the model said it was done.`);
    }
    if (!result.patch.trim()) return noChange('The model finished without changing any file; the pull request is unchanged.');

    reporter.update({ phase: 'publishing', detail: 'Checking and pushing the change.' });
    await applyPatch(head.dir, result.patch, { timeoutMs: ctx.gitTimeoutMs }).catch((e: unknown) => {
      throw new JobFailure(`The model's change does not apply to the pull request's head. Ask again with \`/frognano <what to change>\`. ${whereToLook(jobId)}`, 'publish', e);
    });
    const files = await stagedNumstat(head.dir);
    if (files.length === 0) return noChange('The model finished, but its changes are empty relative to the pull request head.');
    const verdict = checkGuardrails(files, config);
    if (!verdict.ok) {
      const reason = `Refused by a guardrail: ${verdict.reason}. Nothing was pushed.`;
      final = { kind: 'failed', reason };
      await history(null, 'refused by a guardrail').catch((err: unknown) => log.warn({ err }, 'could not update the run history'));
      return { outcome: 'refused', reason, ...runFacts };
    }

    if (tokenExpiresSoon(access)) {
      const old = access.token;
      access = await installationAccessFor(ctx)(data.installationId, data.repo);
      forgetSecretLater(old);
    }
    const auth: GitAuth = { baseUrl: ctx.gitBaseUrl, token: access.token };
    const message = withCoAuthor(commitMessage(data, t.final_message), data.triggeredBy);
    const pushed = await commitAndPush({ data, jobId, head, patch: result.patch, message, auth, ctx, jobDir, signal, log });

    // A new head needs a new human approval: the check waits again, the labels and the review request follow.
    await history(pushed, `${files.length} file${files.length === 1 ? '' : 's'} changed${summaryLine(files)}`);
    await createApprovalCheck(octokit, { owner: data.owner, repo: data.repo, headSha: pushed, pullRequestUrl: prUrl, issueNumber: data.issueNumber, notApprovableBy: twoPersonRule(config, data) });
    await labelAwaitingReview(octokit, data.owner, data.repo, f.pullNumber);
    await requestReview(octokit, data.owner, data.repo, f.pullNumber, data.triggeredBy.login).catch((err: unknown) => log.warn({ err }, 'could not request a review'));
    log.info({ head: pushed, files: files.length }, 'follow-up pushed');
    final = { kind: 'pull_request', url: prUrl, number: f.pullNumber, summary: clip(redact(t.final_message), 1500) };
    return { outcome: 'pull_request', pullRequestUrl: prUrl, pullRequestNumber: f.pullNumber, branch: f.headBranch, ...runFacts };
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
    log.error({ err: failure.underlying ?? e, category: failure.category, phase }, `follow-up failed: ${failure.reason}`);
    throw failure;
  } finally {
    await reporter?.close();
    const state: StatusState = final ?? { kind: 'failed', reason: publicFailure.noResult };
    await setStatus(state).catch((err: unknown) => log.error({ err, state: state.kind }, 'could not update the status comment'));
    if (!handBack) log.info({ outcome: state.kind, seconds: Math.round((Date.now() - started) / 1000) }, 'follow-up finished');
    await fs.rm(jobDir, { recursive: true, force: true }).catch(() => undefined);
    if (access) forgetSecretLater(access.token);
  }
}

type Prepared =
  | { kind: 'stop'; state: StatusState; reason: string }
  | { kind: 'go'; config: RepoConfig; baseDir: string; head: CloneResult; prUrl: string };

/**
 * Checks the PR is still the bot's and open, reads the repository's config and instructions from the
 * base branch (never from the PR branch, which the model wrote), enforces the round cap, and clones the
 * PR branch at its current head.
 */
async function prepare(data: FollowUpData, jobId: string, ctx: RunnerContext, access: InstallationAccess, jobDir: string, signal: AbortSignal, log: Logger): Promise<Prepared> {
  const f = data.followUp;
  const pr = await getPullRequest(access.octokit, data.owner, data.repo, f.pullNumber);
  const stop = (reason: string): Prepared => ({ kind: 'stop', state: { kind: 'failed', reason }, reason });
  if (pr.state !== 'open') return stop(`Pull request #${f.pullNumber} is ${pr.state}; nothing was changed.`);
  const ours = pr.head.ref.startsWith(BOT_BRANCH_PREFIX) && pr.head.repo?.full_name === pr.base.repo.full_name && pr.user?.type === 'Bot';
  if (pr.head.ref !== f.headBranch || !ours) {
    return stop(`Pull request #${f.pullNumber} no longer points at the bot's branch \`${f.headBranch}\`; nothing was changed.`);
  }

  const auth: GitAuth = { baseUrl: ctx.gitBaseUrl, token: access.token };
  const gitOpts = { timeoutMs: ctx.gitTimeoutMs, signal };
  const clone = async (branch: string, dest: string) => {
    try {
      return await cloneRepo({ owner: data.owner, repo: data.repo, auth, dest: path.join(jobDir, dest), branch, ...gitOpts });
    } catch (e) {
      throwIfAborted(signal);
      throw new JobFailure(publicFailure.clone(jobId, branch, false), 'clone', e);
    }
  };
  const base = await clone(pr.base.ref, 'base');
  let config: RepoConfig;
  try {
    config = (await loadRepoConfig(base.dir)).config;
  } catch (e) {
    if (e instanceof RepoConfigError) {
      throw new JobFailure(`${e.message}. Fix \`.github/frognano.yml\` on \`${base.branch}\` and ask again with \`/frognano <what to change>\`.`, 'config');
    }
    throw e;
  }
  if (f.round > config.followUp.maxRounds) {
    await labelNeedsHuman(access.octokit, data.owner, data.repo, f.pullNumber);
    const reason =
      `This pull request has had ${config.followUp.maxRounds} follow-up round${config.followUp.maxRounds === 1 ? '' : 's'}, the limit ` +
      '(`followUp.maxRounds` in `.github/frognano.yml`). It is labelled `frognano:needs-human`: a maintainer needs to finish it by hand.';
    log.info({ round: f.round, max: config.followUp.maxRounds }, 'follow-up: round cap reached');
    return { kind: 'stop', state: { kind: 'no_patch', reason }, reason };
  }
  const head = await clone(f.headBranch, 'head');
  if (head.headSha !== f.headSha) log.info({ requested: f.headSha, head: head.headSha }, 'follow-up: the branch moved since the request; building on its current head');
  return { kind: 'go', config, baseDir: base.dir, head, prUrl: pr.html_url };
}

/**
 * Commits on the clone's branch and pushes without force. If the branch moved meanwhile (a human
 * pushed), their head is cloned again and the model's patch applied on top of it, once; if it no
 * longer applies, the round fails with nothing overwritten.
 */
async function commitAndPush(o: {
  data: FollowUpData;
  jobId: string;
  head: CloneResult;
  patch: string;
  message: string;
  auth: GitAuth;
  ctx: RunnerContext;
  jobDir: string;
  signal: AbortSignal;
  log: Logger;
}): Promise<string> {
  const { data, ctx, signal } = o;
  const branch = data.followUp.headBranch;
  const identity = ctx.identity ?? DEFAULT_BOT_IDENTITY;
  const push = (dir: string) =>
    pushBranch(dir, { owner: data.owner, repo: data.repo, branch, auth: o.auth, timeoutMs: ctx.gitTimeoutMs, signal }).catch((e: unknown) => {
      throwIfAborted(signal);
      if (isNonFastForward(e)) throw e;
      throw new JobFailure(publicFailure.push(o.jobId, branch), 'publish', e);
    });
  const sha = await commitStagedOnHead(o.head.dir, { message: o.message, identity });
  throwIfAborted(signal);
  try {
    await push(o.head.dir);
    return sha;
  } catch (e) {
    if (!isNonFastForward(e)) throw e;
  }
  o.log.info('follow-up: the branch moved during the run; re-applying on its new head');
  let again: CloneResult;
  try {
    again = await cloneRepo({ owner: data.owner, repo: data.repo, auth: o.auth, dest: path.join(o.jobDir, 'head-again'), branch, timeoutMs: ctx.gitTimeoutMs, signal });
    await applyPatch(again.dir, o.patch, { timeoutMs: ctx.gitTimeoutMs });
  } catch (e) {
    throwIfAborted(signal);
    throw new JobFailure(
      `Someone pushed to \`${branch}\` while the model worked, and its change no longer applies on top of theirs. Nothing was pushed; ask again with \`/frognano <what to change>\`. ${whereToLook(o.jobId)}`,
      'publish',
      e,
    );
  }
  const rebuilt = await commitStagedOnHead(again.dir, { message: o.message, identity });
  await push(again.dir).catch((e: unknown) => {
    throw e instanceof JobFailure ? e : new JobFailure(publicFailure.push(o.jobId, branch), 'publish', e);
  });
  return rebuilt;
}

/** Adds the round's row to the run history in the PR description (read fresh: a maintainer may have edited it). */
async function recordRound(octokit: InstallationAccess['octokit'], data: FollowUpData, entry: HistoryEntry): Promise<void> {
  const pr = await getPullRequest(octokit, data.owner, data.repo, data.followUp.pullNumber);
  await setPullRequestBody(octokit, data.owner, data.repo, data.followUp.pullNumber, appendRunHistory(pr.body ?? '', entry));
}

function commitMessage(d: FollowUpData, finalMessage: string): string {
  const f = d.followUp;
  const subject = `frognano: address ${f.source === 'review' ? 'review' : 'feedback'} on #${f.pullNumber} (round ${f.round})`.slice(0, 72);
  const bodyText = defang(clip(redact(finalMessage).trim(), 4000));
  return `${subject}\n\nRefs #${d.issueNumber}. Written by the FrogNano-4B model; needs human review.\n${bodyText ? `\n${bodyText}\n` : ''}`;
}

function summaryLine(files: NumstatEntry[]): string {
  const adds = files.reduce((n, x) => n + x.additions, 0);
  const dels = files.reduce((n, x) => n + x.deletions, 0);
  return ` (+${adds} −${dels})`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
