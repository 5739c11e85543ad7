import path from 'node:path';
import type { Logger } from 'pino';
import { postComment } from '../github/comments.js';
import { labelNeedsHuman } from '../github/followUpPullRequest.js';
import { enqueueFollowUp, pullRequestKey, type EnqueueRound, type FollowUpRequest } from '../queue/followUps.js';
import type { FrognanoQueue } from '../queue/queue.js';
import { JobDataSchema, type JobData, type JobResult } from '../queue/schema.js';
import type { RepairRequest, VerifyRepair } from '../queue/verifyRepair.js';
import { errorText } from '../util/errors.js';
import { followUpRound, type FollowUpData, type HeadCheckout } from './followUp.js';
import type { InstallationAccess } from '../github/client.js';
import { forgetSecretLater, installationAccessFor } from './jobSupport.js';
import { runnerAdmit } from './quotaGate.js';
import { repairReport } from './repairReport.js';
import type { CheckedChange, Checkout, LiveRun, Published, RoundVariant, Stopped } from './roundVariant.js';
import type { RunnerContext } from './types.js';

export type RepairData = FollowUpData & { verifyRepair: VerifyRepair };

/** Who a repair round is by: the bot (no person asked; any writer may approve its head). */
const REPAIR_TRIGGER = { login: 'frognano', id: 0 };

/**
 * A verification-repair round (issue #26 item 7, `verify.onFailure: repair`): the follow-up round (the PR branch at
 * its head, new commits on top, run history, approval re-armed) whose task is the failing verdict the bot measured:
 * the regressions and failing commands with their output tails, and the findings. Like a CI fix it credits nobody.
 */
export const verifyRepairRound: RoundVariant<RepairData, HeadCheckout> = {
  ...(followUpRound as unknown as RoundVariant<RepairData, HeadCheckout>),
  noun: 'verify-repair',
  texts: (data) => ({
    ...followUpRound.texts(data),
    noFileChanged: 'The model finished without changing any file; the verification verdict is unchanged.',
  }),
  prepare,
  taskAdditions: (data) => [
    { kind: 'ci', heading: 'Failing verification of your change', text: data.verifyRepair.report },
  ],
  trajectoryDir: (ctx, data) =>
    path.join(
      ctx.trajectoryDir,
      data.owner,
      data.repo,
      `pr-${data.followUp.pullNumber}-round-${data.followUp.round}-repair`,
    ),
};

async function prepare(run: LiveRun<RepairData>): Promise<HeadCheckout | Stopped> {
  const checkout = await followUpRound.prepare(run);
  if ('stop' in checkout) return checkout;
  if (checkout.config.verify.onFailure !== 'repair') {
    const reason = 'Repair rounds are off for this repository (`verify.onFailure: report` in `.github/frognano.yml`).';
    return { stop: 'refused', reason };
  }
  return checkout;
}

/** The head branch of a published change: the pull request a repair round works on. */
function repairTarget(run: LiveRun, checkout: Checkout, published: Published) {
  const data = run.data;
  // A first attempt's pull request targets `baseBranch` from .github/frognano.yml when it names one.
  const baseBranch = data.followUp?.baseBranch ?? checkout.config.baseBranch ?? data.defaultBranch;
  return { pullNumber: published.number, headBranch: published.branch, baseBranch };
}

/**
 * After a round published a change whose verdict failed: the repair round to queue (returned, for the runner to
 * queue once this round has ended), or, past `verify.maxRepairRounds` in a row, the pull request labelled
 * `frognano:needs-human` with one comment. Nothing for a passing verdict or `verify.onFailure: report`.
 */
export async function repairAfter(
  run: LiveRun,
  checkout: Checkout,
  change: CheckedChange,
  published: Published,
): Promise<RepairRequest | undefined> {
  const outcome = change.verification;
  const cfg = checkout.config.verify;
  if (outcome?.state !== 'verified' || outcome.verdict.conclusion !== 'failure') return undefined;
  if (cfg.onFailure !== 'repair' || !published.headSha) return undefined;
  const streak = (run.data.verifyRepair?.streak ?? 0) + 1;
  if (streak > cfg.maxRepairRounds) {
    await giveUp(run, published, cfg.maxRepairRounds).catch((err: unknown) =>
      run.log.warn({ err: errorText(err) }, 'verify-repair: could not label the pull request'),
    );
    return undefined;
  }
  const target = repairTarget(run, checkout, published);
  return { ...target, headSha: published.headSha, streak, report: repairReport(outcome.verdict) };
}

async function giveUp(run: LiveRun, published: Published, max: number): Promise<void> {
  const { owner, repo } = run.data;
  await labelNeedsHuman(run.access.octokit, owner, repo, published.number);
  const rounds = max === 0 ? 'Repair rounds are off' : `The bot tried ${max} repair round${max === 1 ? '' : 's'}`;
  const text =
    `The verification of this pull request's head still fails (see its Verification section and the ` +
    '`frognano / verification` check). ' +
    `${rounds} (\`verify.maxRepairRounds\` in \`.github/frognano.yml\`); it is labelled \`frognano:needs-human\`. ` +
    'Ask for another round with `/frognano <what to change>`.';
  await postComment(run.access.octokit, { owner, repo, issueNumber: published.number }, text);
}

/** The follow-up request of a repair round, from the round that asked for it. */
export function repairRequestData(data: JobData, repair: RepairRequest, now = new Date()): FollowUpRequest {
  const { followUp: _f, ciFix: _c, verifyRepair: _v, commentId: _id, deliveryId: _d, guidance: _g, ...issue } = data;
  const { pullNumber, headBranch, baseBranch, headSha, streak, report } = repair;
  return {
    ...issue,
    triggeredBy: REPAIR_TRIGGER,
    trigger: 'verify',
    enqueuedAt: now.toISOString(),
    followUp: {
      pullNumber,
      headBranch,
      headSha,
      baseBranch,
      feedback: '',
      inlineComments: [],
      omittedComments: 0,
      source: 'verify',
    },
    verifyRepair: { headSha, streak, report },
  };
}

/**
 * Called by the runner once a round has ended (after the waiting asks had their turn): queues the repair round the
 * round asked for. People's asks come first: when a round of theirs is queued, it pushes a new head that is verified
 * again, so no repair is queued. Never throws: the round's own result stands.
 */
export async function startRepairRound(
  queue: FrognanoQueue,
  ctx: RunnerContext,
  jobData: unknown,
  result: JobResult | undefined,
  log: Logger,
  enqueue?: EnqueueRound,
): Promise<void> {
  const parsed = JobDataSchema.safeParse(jobData);
  if (!parsed.success || !result?.repair) return;
  try {
    const req = repairRequestData(parsed.data, result.repair);
    const key = pullRequestKey(req.owner, req.repo, req.followUp.pullNumber);
    // Under the same quotas as a CI fix: refused, the pull request keeps its verdict and is told why (once).
    let access: InstallationAccess | null = null;
    const admit = runnerAdmit(queue, ctx, key, {
      access: async () => (access = await installationAccessFor(ctx)(req.installationId, req.repo).catch(() => null)),
      what: "The verification of this pull request's head failed, but no repair round was queued (its verdict stands)",
      mark: 'repair',
      log,
    });
    const res = await enqueueFollowUp(queue, ctx.redis, req, undefined, enqueue, admit).finally(() => {
      if (access) forgetSecretLater((access as InstallationAccess).token);
    });
    if (res.kind === 'queued') log.info({ round: res.round, jobId: res.job.id }, 'queued a verification-repair round');
    else if (res.kind === 'over_quota') log.info({ quota: res.refusal.quota }, 'no repair round: over quota');
    else log.info({ round: res.round }, 'no repair round: another round of the pull request is queued or running');
  } catch (err) {
    log.error({ err, pr: result.repair.pullNumber }, 'could not queue the verification-repair round');
  }
}
