import path from 'node:path';
import { createApprovalCheck } from '../github/checks.js';
import { withCoAuthors } from '../github/coAuthor.js';
import { getPullRequest, labelAwaitingReview, labelNeedsHuman, requestReview } from '../github/followUpPullRequest.js';
import {
  applyPatch,
  BOT_BRANCH_PREFIX,
  commitStagedOnHead,
  DEFAULT_BOT_IDENTITY,
  isNonFastForward,
  pushBranch,
  type CloneResult,
  type NumstatEntry,
} from '../github/git.js';
import { automaticSource } from '../queue/verifyRepair.js';
import type { FollowUp, JobData } from '../queue/schema.js';
import { redact } from '../util/redact.js';
import { twoPersonRule } from './approval.js';
import { commitMessage } from './commitMessage.js';
import { roundSubject } from './roundLabels.js';
import { throwIfAborted } from './jobSupport.js';
import { publicFailure, whereToLook } from './publicFailure.js';
import type { CheckedChange, Checkout, LiveRun, RoundVariant, Stopped } from './roundVariant.js';
import { authFor, cloneBranch, cloneForRound, loadConfig } from './roundSteps.js';
import { describeRound } from './roundDescription.js';
import { feedbackSection } from './taskContext.js';
import { JobFailure } from './types.js';

export type FollowUpData = JobData & { followUp: FollowUp };
type FollowUpRun = LiveRun<FollowUpData>;

/** The PR branch at its current head; config and instructions come from the base branch. */
export interface HeadCheckout extends Checkout {
  head: CloneResult;
  prUrl: string;
}

/**
 * A follow-up round on the bot's own draft pull request: clone the PR branch at its current head (a
 * human's newer commits included), let the model address the feedback, commit on top (co-authored by
 * whoever asked), push without force, add a row to the PR's run history, and put the approval check on
 * the new head back to "waiting for a human". Progress and the result go to one status comment on the PR.
 */
export const followUpRound: RoundVariant<FollowUpData, HeadCheckout> = {
  noun: 'follow-up',
  pageKind: 'follow-up',
  logFields: (data) => ({ pr: data.followUp.pullNumber, round: data.followUp.round }),
  statusTarget: (data) => ({
    ref: { owner: data.owner, repo: data.repo, issueNumber: data.followUp.pullNumber },
    meta: { round: data.followUp.round },
  }),
  texts: (data) => ({
    cloning: `Reading the pull request and cloning \`${data.followUp.headBranch}\`.`,
    publishing: 'Checking and pushing the change.',
    unfinished: 'Nothing pushed',
    noFileChanged: 'The model finished without changing any file; the pull request is unchanged.',
    emptyDiff: 'The model finished, but its changes are empty relative to the pull request head.',
    refusedTail: 'Nothing was pushed.',
    patchFailed: (jobId) =>
      `The model's change does not apply to the pull request's head. Ask again with \`/frognano <what to change>\`. ${whereToLook(jobId)}`,
  }),
  prepare,
  taskAdditions: (data) => feedbackSection(data.followUp, data.triggeredBy.login),
  trajectoryDir: (ctx, data) =>
    path.join(ctx.trajectoryDir, data.owner, data.repo, `pr-${data.followUp.pullNumber}-round-${data.followUp.round}`),
  nothingPublished: (run, note) =>
    describeRound(run, { headSha: null, result: note }).catch((err: unknown) =>
      run.log.warn({ err }, 'could not update the run history'),
    ),
  publish: pushOnPullRequest,
};

/**
 * Checks the PR is still the bot's and open, reads the repository's config and instructions from the
 * base branch (never from the PR branch, which the model wrote), enforces the round cap, and clones the
 * PR branch at its current head.
 */
async function prepare(run: FollowUpRun): Promise<HeadCheckout | Stopped> {
  const { data, log } = run;
  const f = data.followUp;
  const pr = await getPullRequest(run.access.octokit, data.owner, data.repo, f.pullNumber);
  if (pr.state !== 'open') {
    return { stop: 'refused', reason: `Pull request #${f.pullNumber} is ${pr.state}; nothing was changed.` };
  }
  const ours =
    pr.head.ref.startsWith(BOT_BRANCH_PREFIX) &&
    pr.head.repo?.full_name === pr.base.repo.full_name &&
    pr.user?.type === 'Bot';
  if (pr.head.ref !== f.headBranch || !ours) {
    const reason = `Pull request #${f.pullNumber} no longer points at the bot's branch \`${f.headBranch}\`; nothing was changed.`;
    return { stop: 'refused', reason };
  }
  const base = await cloneBranch(run, pr.base.ref, 'base');
  const config = await loadConfig(base.dir, base.branch, 'ask again with `/frognano <what to change>`');
  const max = config.followUp.maxRounds;
  if (f.round > max) {
    await labelNeedsHuman(run.access.octokit, data.owner, data.repo, f.pullNumber);
    log.info({ round: f.round, max }, 'follow-up: round cap reached');
    const reason =
      `This pull request has had ${max} follow-up round${max === 1 ? '' : 's'}, the limit ` +
      '(`followUp.maxRounds` in `.github/frognano.yml`). It is labelled `frognano:needs-human`: a maintainer needs to finish it by hand.';
    return { stop: 'no_patch', reason };
  }
  const head = await cloneBranch(run, f.headBranch, 'head');
  if (head.headSha !== f.headSha) {
    log.info(
      { requested: f.headSha, head: head.headSha },
      'follow-up: the branch moved since the request; building on its current head',
    );
  }
  log.info({ head: head.headSha, requestedHead: f.headSha }, 'follow-up: solving');
  return { config, workDir: head.dir, instructionsDir: base.dir, head, prUrl: pr.html_url };
}

async function pushOnPullRequest(run: FollowUpRun, checkout: HeadCheckout, change: CheckedChange) {
  const { data, log } = run;
  const f = data.followUp;
  const octokit = run.access.octokit;
  const pushed = await commitAndPush(run, checkout.head, change);
  // A new head needs a new human approval: the check waits again, the labels and the review request follow.
  const files = change.files;
  const result = `${files.length} file${files.length === 1 ? '' : 's'} changed${summaryLine(files)}`;
  const summary = redact(change.solved.trajectory.final_message);
  const tests = change.solved.testResults;
  const verification = change.verification;
  const blockedRequests = change.solved.blockedRequests;
  await describeRound(run, { headSha: pushed, result, pushed: { summary, tests, verification, blockedRequests } });
  const notApprovableBy = twoPersonRule(checkout.config, data);
  await createApprovalCheck(octokit, {
    owner: data.owner,
    repo: data.repo,
    headSha: pushed,
    pullRequestUrl: checkout.prUrl,
    issueNumber: data.issueNumber,
    notApprovableBy,
    detailsUrl: run.page?.url,
  });
  await labelAwaitingReview(octokit, data.owner, data.repo, f.pullNumber);
  // A CI-fix or repair round has nobody who asked: no review request (the needs-review label stands).
  if (!automaticSource(f.source)) {
    await requestReview(octokit, data.owner, data.repo, f.pullNumber, data.triggeredBy.login).catch((err: unknown) =>
      log.warn({ err }, 'could not request a review'),
    );
  }
  log.info({ head: pushed, files: files.length }, 'follow-up pushed');
  return { url: checkout.prUrl, number: f.pullNumber, branch: f.headBranch, headSha: pushed };
}

/**
 * Commits on the clone's branch and pushes without force. If the branch moved meanwhile (a human
 * pushed), their head is cloned again and the model's patch applied on top of it, once; if it no
 * longer applies, the round fails with nothing overwritten.
 */
async function commitAndPush(run: FollowUpRun, head: CloneResult, change: CheckedChange): Promise<string> {
  const { data, ctx, signal, jobId } = run;
  const f = data.followUp;
  const subject = roundSubject(data);
  const finalMessage = change.solved.trajectory.final_message;
  // No person asked for a CI fix or a repair: its commit credits nobody.
  const askers = automaticSource(f.source) ? [] : (f.asks?.map((a) => a.author) ?? [data.triggeredBy]);
  const message = withCoAuthors(commitMessage(subject, data.issueNumber, finalMessage), askers);
  const identity = ctx.identity ?? DEFAULT_BOT_IDENTITY;
  const branch = f.headBranch;
  const auth = authFor(run);
  const target = { owner: data.owner, repo: data.repo, branch, auth, timeoutMs: ctx.gitTimeoutMs, signal };
  const push = (dir: string) =>
    pushBranch(dir, target).catch((e: unknown) => {
      throwIfAborted(signal);
      if (isNonFastForward(e)) throw e;
      throw new JobFailure(publicFailure.push(jobId, branch), 'publish', e);
    });
  const sha = await commitStagedOnHead(head.dir, { message, identity });
  throwIfAborted(signal);
  try {
    await push(head.dir);
    return sha;
  } catch (e) {
    if (!isNonFastForward(e)) throw e;
  }
  run.log.info('follow-up: the branch moved during the run; re-applying on its new head');
  const again = await reapplyOnNewHead(run, change.solved.patch);
  const rebuilt = await commitStagedOnHead(again.dir, { message, identity });
  await push(again.dir).catch((e: unknown) => {
    throw e instanceof JobFailure ? e : new JobFailure(publicFailure.push(jobId, branch), 'publish', e);
  });
  return rebuilt;
}

async function reapplyOnNewHead(run: FollowUpRun, patch: string): Promise<CloneResult> {
  const { data, ctx, signal } = run;
  const branch = data.followUp.headBranch;
  try {
    const again = await cloneForRound(run, branch, 'head-again');
    await applyPatch(again.dir, patch, { timeoutMs: ctx.gitTimeoutMs });
    return again;
  } catch (e) {
    throwIfAborted(signal);
    throw new JobFailure(
      `Someone pushed to \`${branch}\` while the model worked, and its change no longer applies on top of theirs. Nothing was pushed; ask again with \`/frognano <what to change>\`. ${whereToLook(run.jobId)}`,
      'publish',
      e,
    );
  }
}

function summaryLine(files: NumstatEntry[]): string {
  const adds = files.reduce((n, x) => n + x.additions, 0);
  const dels = files.reduce((n, x) => n + x.deletions, 0);
  return ` (+${adds} −${dels})`;
}
