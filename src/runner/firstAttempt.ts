import path from 'node:path';
import { createApprovalCheck } from '../github/checks.js';
import { withCoAuthor } from '../github/coAuthor.js';
import { requestReview } from '../github/followUpPullRequest.js';
import { branchNameFor, commitStaged, DEFAULT_BOT_IDENTITY, pushBranch, type CloneResult } from '../github/git.js';
import {
  labelNeedsReview,
  openDraftPullRequest,
  pullRequestTitle,
  renderPullRequestBody,
} from '../github/pullRequest.js';
import { untrustedLine } from '../github/untrusted.js';
import { describeExit, renderTrajectoryMarkdown } from '../leaf/trajectory.js';
import type { JobData } from '../queue/schema.js';
import { redact } from '../util/redact.js';
import { twoPersonRule } from './approval.js';
import { commitMessage } from './commitMessage.js';
import { throwIfAborted } from './jobSupport.js';
import { publishPartialWork } from './partialWork.js';
import { verificationSection } from '../github/verification.js';
import { publicFailure } from './publicFailure.js';
import type { CheckedChange, Checkout, LiveRun, RoundTexts, RoundVariant } from './roundVariant.js';
import { authFor, cloneBranch, dropClone, loadConfig, rethrowAs } from './roundSteps.js';

/** A first attempt works on a clone of the base branch and publishes from it. */
interface BaseCheckout extends Checkout {
  clone: CloneResult;
}

const TEXTS: RoundTexts = {
  cloning: 'Cloning the repository.',
  publishing: 'Checking and publishing the change.',
  unfinished: 'No pull request',
  noFileChanged: 'The model finished without changing any file.',
  emptyDiff: 'The model finished, but its changes are empty relative to the base branch.',
  refusedTail: 'No branch was pushed.',
  patchFailed: (jobId) => publicFailure.patch(jobId),
};

/** A first attempt on an issue: the base branch -> a new branch and a draft pull request waiting for approval. */
export const firstAttempt: RoundVariant<JobData, BaseCheckout> = {
  noun: 'job',
  pageKind: 'draft',
  logFields: (data) => ({ issue: data.issueNumber }),
  statusTarget: (data) => ({
    ref: { owner: data.owner, repo: data.repo, issueNumber: data.issueNumber },
    meta: { attempt: data.attempt },
  }),
  texts: () => TEXTS,
  prepare: cloneBase,
  taskAdditions: () => [],
  trajectoryDir: (ctx, data) =>
    path.join(ctx.trajectoryDir, data.owner, data.repo, `issue-${data.issueNumber}-attempt-${data.attempt}`),
  // publishFailedAttempts: keep a run's unfinished changes on a branch before reporting how it ended.
  keepUnfinished: (run, checkout, solved) =>
    publishPartialWork({
      data: run.data,
      cloneDir: checkout.clone.dir,
      patch: solved.patch,
      config: checkout.config,
      auth: authFor(run),
      identity: run.ctx.identity,
      what: describeExit(solved.trajectory),
      gitTimeoutMs: run.ctx.gitTimeoutMs,
      log: run.log,
    }),
  publish: openPullRequest,
};

/** The branch the job names, the repo's config from it, and a fresh clone when the config names another base. */
async function cloneBase(run: LiveRun): Promise<BaseCheckout> {
  let clone = await cloneBranch(run, run.data.defaultBranch, 'repo');
  const config = await loadConfig(clone.dir, clone.branch, 'comment `/frognano retry`');
  if (config.baseBranch && config.baseBranch !== clone.branch) {
    await dropClone(clone);
    clone = await cloneBranch(run, config.baseBranch, 'repo', true);
  }
  run.log.info({ base: clone.branch, head: clone.headSha }, 'solving');
  // The agent works on a copy of the clone inside the sandbox; the clone itself stays pristine.
  return { config, clone, workDir: clone.dir, instructionsDir: clone.dir };
}

async function openPullRequest(run: LiveRun, checkout: BaseCheckout, change: CheckedChange) {
  const { data, jobId, log } = run;
  const { branch, headSha } = await pushNewBranch(run, checkout, change);
  const octokit = run.access.octokit;
  const pr = await openDraftPullRequest(octokit, {
    owner: data.owner,
    repo: data.repo,
    head: branch,
    base: checkout.clone.branch,
    title: pullRequestTitle(data.title, data.issueNumber),
    body: pullRequestBody(run, change),
  }).catch(rethrowAs(run, publicFailure.pullRequest(jobId, branch), 'publish'));
  await labelNeedsReview(octokit, data.owner, data.repo, pr.number);
  // A second pair of eyes starts with the person who asked: GitHub puts the PR in their review queue.
  await requestReview(octokit, data.owner, data.repo, pr.number, data.triggeredBy.login).catch((err: unknown) =>
    log.warn({ err }, 'could not request a review'),
  );
  const notApprovableBy = twoPersonRule(checkout.config, data);
  await createApprovalCheck(octokit, {
    owner: data.owner,
    repo: data.repo,
    headSha,
    pullRequestUrl: pr.url,
    issueNumber: data.issueNumber,
    notApprovableBy,
    detailsUrl: run.page?.url,
  });
  log.info({ pr: pr.url, branch, files: change.files.length }, 'draft pull request opened');
  return { url: pr.url, number: pr.number, branch, headSha };
}

/** Same attempt = same branch: a job handed back and run again replaces its own earlier push. */
async function pushNewBranch(run: LiveRun, checkout: BaseCheckout, change: CheckedChange) {
  const { data, ctx, signal } = run;
  const branch = branchNameFor(data.issueNumber, data.attempt);
  const subject = `frognano: ${untrustedLine(data.title, 200)}`;
  const finalMessage = change.solved.trajectory.final_message;
  const message = withCoAuthor(commitMessage(subject, data.issueNumber, finalMessage), data.triggeredBy);
  const dir = checkout.clone.dir;
  const headSha = await commitStaged(dir, { branch, message, identity: ctx.identity ?? DEFAULT_BOT_IDENTITY });
  throwIfAborted(signal);
  const auth = authFor(run);
  const target = { owner: data.owner, repo: data.repo, branch, auth, force: true, timeoutMs: ctx.gitTimeoutMs, signal };
  await pushBranch(dir, target).catch(rethrowAs(run, publicFailure.push(run.jobId, branch), 'publish'));
  return { branch, headSha };
}

function pullRequestBody(run: LiveRun, { solved, files, facts, verification }: CheckedChange): string {
  const t = solved.trajectory;
  const timedOut = (what: string, results: { command: string; timedOut?: boolean }[]) =>
    results.filter((r) => r.timedOut).map((r) => `${what} command \`${r.command.slice(0, 100)}\` timed out`);
  return renderPullRequestBody({
    issueNumber: run.data.issueNumber,
    summary: redact(t.final_message),
    files,
    tests: solved.testResults,
    blockedRequests: solved.blockedRequests,
    exitReason: t.exit_reason,
    exitReasonText: describeExit(t),
    limitsHit: [...timedOut('setup', solved.setupResults), ...timedOut('test', solved.testResults)],
    turns: t.n_steps,
    elapsedSeconds: facts.elapsedSeconds,
    model: `${t.frognano.model.model} (${t.frognano.model.backend})`,
    runner: run.ctx.runnerDescription,
    jobId: run.jobId,
    renderTrajectory: (max) => redact(renderTrajectoryMarkdown(t, max)),
    runPageUrl: run.page?.url,
    ...(verification ? { verification: verificationSection(verification, solved.testResults) } : {}),
  });
}
