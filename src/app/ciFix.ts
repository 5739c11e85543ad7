import { readCommitChecks, failingAlsoOn, type CheckFailure } from '../github/checkRuns.js';
import { APPROVAL_CHECK_NAME } from '../github/checks.js';
import {
  ciHistoryRows,
  committedByBot,
  labelNeedsHumanVia,
  openPullRequestsAt,
  readRepoConfigAt,
  type CiPullRequest,
} from '../github/ciPullRequest.js';
import { postComment } from '../github/comments.js';
import { BOT_BRANCH_PREFIX, DEFAULT_BOT_IDENTITY } from '../github/git.js';
import type { RepoConfig } from '../github/repoConfig.js';
import { currentAttempt, type IssueKey } from '../queue/attempts.js';
import {
  answeredChecks,
  autofixOff,
  ciStreak,
  claimCiFailure,
  claimCiNote,
  MAX_FAILING_CHECKS,
  recordCiRound,
  releaseCiFailure,
  answeringText,
} from '../queue/ciFix.js';
import { rememberCiFailure, scheduleCiJudgment, type CiJudgment } from '../queue/ciJudge.js';
import { pullRequestKey } from '../queue/followUps.js';
import { capText, humanHeadText, predatesText } from './ciFixMessages.js';
import type { CiEvent } from './ciPayloads.js';
import type { Delivery, HandlerDeps } from './deps.js';
import { notFollowUpTarget, requestFollowUp } from './followUp.js';

/**
 * CI finished on a commit: when it is the head of the bot's own open pull request, the bot pushed it, and checks
 * failed that do not fail on the base too, a CI-fix round is queued (a follow-up round with source `ci`, run by
 * src/runner/ciFix.ts). One round per (head, set of failing checks), at most `ciFix.maxRounds` in a row.
 */
export type CiFixDecision =
  | { action: 'queued'; round: number; jobId: string }
  | { action: 'busy'; round: number | null }
  | { action: 'capped'; failing: string[] }
  /** Judged `seconds` after the last completed check (ciFix.settleSeconds), from a delayed job. */
  | { action: 'settling'; seconds: number }
  | { action: 'ignored'; why: string };

/** Who "asked" for an automatic round: the bot itself (no person; no co-author, no two-person rule). */
export const CI_TRIGGER = { login: DEFAULT_BOT_IDENTITY.name, id: 0 };

/**
 * `after`: how this judgment came: from the webhook (none: a settle window may come first), from the delayed job
 * once the window passed (`settle`), or when a round of the pull request ended (`round`).
 */
export async function onCiCompleted(
  deps: HandlerDeps,
  d: Delivery,
  ev: CiEvent,
  after?: CiJudgment['after'],
): Promise<CiFixDecision> {
  if (ev.checkName === APPROVAL_CHECK_NAME) return { action: 'ignored', why: "the bot's own approval check" };
  const branches = ev.branches.filter((b) => b.startsWith(BOT_BRANCH_PREFIX));
  if (branches.length === 0) return { action: 'ignored', why: 'not a frognano branch' };
  const checks = await readCommitChecks(d.octokit, { owner: ev.owner, repo: ev.repo, sha: ev.headSha });
  if (checks.state === 'pending')
    return { action: 'ignored', why: `CI still running (${checks.waitingFor.slice(0, 3).join(', ')})` };
  if (checks.failing.length === 0) return { action: 'ignored', why: 'CI passed' };
  const pr = await pullRequestFor(d, ev, branches);
  if (!pr) return { action: 'ignored', why: 'no open pull request has this commit as its head' };
  const notTarget = notFollowUpTarget(pr);
  if (notTarget) return { action: 'ignored', why: notTarget };
  const key = pullRequestKey(ev.owner, ev.repo, pr.number);
  if (!after) {
    const settling = await settleFirst(deps, d, ev, pr);
    if (settling) return settling;
  }
  const names = checks.failing.map((f) => f.name);
  if (!(await claimCiFailure(deps.redis, key, ev.headSha, names)))
    return { action: 'ignored', why: 'already handled (same head, same failing checks)' };
  try {
    const decision = await decide(deps, d, { ev, pr, key, failing: checks.failing });
    if (decision.action === 'busy') {
      // A round of the pull request runs: if it pushes nothing, this failure is judged again when it ends.
      await rememberCiFailure(deps.redis, key, ev);
      await releaseCiFailure(deps.redis, key, ev.headSha, names);
    }
    return decision;
  } catch (err) {
    await releaseCiFailure(deps.redis, key, ev.headSha, names); // let a redelivery or the next event try again
    throw err;
  }
}

/**
 * The settle window: with `ciFix.settleSeconds` > 0 the head is judged by a delayed job that many seconds after
 * the last completed check (each completion starts the window again), not now. Null: judge now.
 */
async function settleFirst(
  deps: HandlerDeps,
  d: Delivery,
  ev: CiEvent,
  pr: CiPullRequest,
): Promise<CiFixDecision | null> {
  if (!deps.ciJudge) return null;
  const config = await readRepoConfigAt(d.octokit, { owner: ev.owner, repo: ev.repo, ref: pr.base.ref });
  // An invalid config or CI fixes turned off: decide() says so now.
  if (!config?.ciFix.enabled || config.ciFix.settleSeconds === 0) return null;
  const seconds = config.ciFix.settleSeconds;
  await scheduleCiJudgment(deps.ciJudge, { ev, after: 'settle' }, seconds * 1000);
  return { action: 'settling', seconds };
}

async function pullRequestFor(d: Delivery, ev: CiEvent, branches: string[]): Promise<CiPullRequest | null> {
  for (const branch of branches) {
    const [pr] = await openPullRequestsAt(d.octokit, { owner: ev.owner, repo: ev.repo, branch, sha: ev.headSha });
    if (pr) return pr;
  }
  return null;
}

interface Failure {
  ev: CiEvent;
  pr: CiPullRequest;
  key: IssueKey;
  failing: CheckFailure[];
}

/** The checks that keep a round from starting, in order, then the round. */
async function decide(deps: HandlerDeps, d: Delivery, f: Failure): Promise<CiFixDecision> {
  const { ev, pr, key } = f;
  if (await autofixOff(deps.redis, key)) return { action: 'ignored', why: 'autofix is off on this pull request' };
  const config = await readRepoConfigAt(d.octokit, { owner: ev.owner, repo: ev.repo, ref: pr.base.ref });
  if (!config) return { action: 'ignored', why: `${pr.base.ref} has an invalid .github/frognano.yml` };
  if (!config.ciFix.enabled) return { action: 'ignored', why: 'ciFix.enabled is false' };
  if (!(await committedByBot(d.octokit, { owner: ev.owner, repo: ev.repo, sha: ev.headSha }))) {
    if (await claimCiNote(deps.redis, key, 'human-head')) await postComment(d.octokit, key, humanHeadText());
    return { action: 'ignored', why: 'a person pushed the head commit' };
  }
  const onBase = await failingAlsoOn(d.octokit, { owner: ev.owner, repo: ev.repo, sha: pr.base.sha }, f.failing);
  const ours = f.failing.filter((c) => !onBase.has(c.name));
  if (ours.length === 0) {
    if (await claimCiNote(deps.redis, key, 'predates'))
      await postComment(d.octokit, key, predatesText([...onBase], pr.base.ref));
    return { action: 'ignored', why: 'every failing check fails on the base too' };
  }
  return startRound(deps, d, { ...f, failing: ours }, config);
}

async function startRound(deps: HandlerDeps, d: Delivery, f: Failure, config: RepoConfig): Promise<CiFixDecision> {
  const { ev, pr, key } = f;
  const names = f.failing.map((c) => c.name);
  const current = await currentAttempt(deps.redis, key);
  const streak = await ciStreak(deps.redis, key, current);
  if (streak >= config.ciFix.maxRounds) {
    if (await claimCiNote(deps.redis, key, `cap@${current ?? 0}`)) {
      await labelNeedsHumanVia(d.octokit, { owner: ev.owner, repo: ev.repo, pullNumber: pr.number });
      const tried = ciHistoryRows(pr.body, config.ciFix.maxRounds);
      await postComment(d.octokit, key, capText({ max: config.ciFix.maxRounds, failing: names, tried }));
    }
    return { action: 'capped', failing: names };
  }
  const checks = f.failing.slice(0, MAX_FAILING_CHECKS);
  const ciFix = { headSha: ev.headSha, checks, omitted: f.failing.length - checks.length, streak: streak + 1 };
  const decision = await requestFollowUp(deps, d, {
    owner: ev.owner,
    repo: ev.repo,
    installationId: ev.installationId,
    defaultBranch: ev.defaultBranch,
    pr,
    by: CI_TRIGGER,
    source: 'ci',
    feedback: '',
    ciFix,
    answering: answeringText(ciFix),
    deliveryId: d.id,
  });
  if (decision.action === 'queued') await recordCiRound(deps.redis, key, decision.round, streak + 1);
  if (decision.action === 'queued') return { action: 'queued', round: decision.round, jobId: decision.jobId };
  if (decision.action === 'ignored') return decision;
  // Over quota: the pull request got the quota comment (once per period); no CI round until the quota resets.
  if (decision.action === 'over_quota') return { action: 'ignored', why: `over quota (${decision.quota})` };
  return { action: 'busy', round: decision.round };
}
