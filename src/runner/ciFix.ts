import path from 'node:path';
import { createInstallationAccess } from '../github/client.js';
import { postComment } from '../github/comments.js';
import type { ChecksOctokit } from '../github/checkRuns.js';
import type { CiFix } from '../queue/ciFix.js';
import { answeringText, claimCiNote } from '../queue/ciFix.js';
import { pullRequestKey } from '../queue/followUps.js';
import { errorText } from '../util/errors.js';
import { readCiReport, type CiReport } from './ciReport.js';
import { followUpRound, type FollowUpData, type HeadCheckout } from './followUp.js';
import type { LiveRun, RoundVariant, Stopped } from './roundVariant.js';

export type CiFixData = FollowUpData & { ciFix: CiFix };
type CiFixRun = LiveRun<CiFixData>;

interface CiCheckout extends HeadCheckout {
  report: CiReport;
}

/**
 * A CI-fix round: the follow-up round (the PR branch at its head, new commits on top, run history, approval check
 * re-armed) with the failing checks' output, annotations and log tails as what the task adds. No person asked for
 * it: the commit has no co-author and any writer may approve its head (src/runner/approval.ts).
 */
export const ciFixRound: RoundVariant<CiFixData, CiCheckout> = {
  ...(followUpRound as unknown as RoundVariant<CiFixData, CiCheckout>),
  noun: 'ci-fix',
  logFields: (data) => ({
    ...followUpRound.logFields(data),
    failing: data.ciFix.checks.map((c) => c.name).slice(0, 10),
  }),
  statusTarget: (data) => {
    const target = followUpRound.statusTarget(data);
    return { ...target, meta: { ...target.meta, answering: answeringText(data.ciFix) } };
  },
  texts: (data) => ({
    ...followUpRound.texts(data),
    noFileChanged: 'The model finished without changing any file; the failing checks are unchanged.',
  }),
  prepare,
  taskAdditions: (_data, checkout) => [checkout.report.section],
  trajectoryDir: (ctx, data) =>
    path.join(
      ctx.trajectoryDir,
      data.owner,
      data.repo,
      `pr-${data.followUp.pullNumber}-round-${data.followUp.round}-ci`,
    ),
};

async function prepare(run: CiFixRun): Promise<CiCheckout | Stopped> {
  const checkout = await followUpRound.prepare(run);
  if ('stop' in checkout) return checkout;
  if (!checkout.config.ciFix.enabled) {
    return {
      stop: 'refused',
      reason: 'CI fixes are off for this repository (`ciFix.enabled: false` in `.github/frognano.yml`).',
    };
  }
  const { data, log } = run;
  const actions = await actionsClient(run);
  const reader = { octokit: run.access.octokit, actions, owner: data.owner, repo: data.repo, signal: run.signal, log };
  const report = await readCiReport(reader, data.followUp, data.ciFix);
  if (report.refused) await sayRefused(run, report.refused);
  log.info({ failing: data.ciFix.checks.length, chars: report.section.text.length }, 'ci-fix: read the failing checks');
  return { ...checkout, report };
}

/**
 * Actions logs need `actions: read`, which the round's own token does not ask for (an installation that never
 * granted it would refuse every token): a second, read-only token is asked for here, and may be refused.
 */
async function actionsClient(run: CiFixRun): Promise<ChecksOctokit | null> {
  try {
    const access = await createInstallationAccess(run.ctx.app, {
      installationId: run.data.installationId,
      repo: run.data.repo,
      retry: false,
      permissions: { actions: 'read', checks: 'read', metadata: 'read' },
    });
    return access.octokit;
  } catch (err) {
    run.log.warn({ err: errorText(err) }, 'ci-fix: no token with `actions: read`; the job logs are left out');
    return null;
  }
}

/** One clear line in the runner's log, and once per pull request on it; the round goes on without the logs. */
async function sayRefused(run: CiFixRun, why: string): Promise<void> {
  const { data } = run;
  run.log.warn({ why }, 'ci-fix: GitHub refused the Actions API; the round goes on with the checks and annotations');
  const pr = pullRequestKey(data.owner, data.repo, data.followUp.pullNumber);
  if (!(await claimCiNote(run.ctx.redis, pr, 'refused'))) return;
  const text =
    `frognano could not read this pull request's GitHub Actions logs (${why}). CI-fix rounds go on with the checks' ` +
    'output and annotations only. Grant the app `actions: read` to give the model the logs too.';
  await postComment(
    run.access.octokit,
    { owner: data.owner, repo: data.repo, issueNumber: pr.issueNumber },
    text,
  ).catch((err: unknown) => run.log.warn({ err: errorText(err) }, 'ci-fix: could not post the note'));
}
