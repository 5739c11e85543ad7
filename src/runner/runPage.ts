import type { StatusState } from '../github/statusComment.js';
import type { SolveResult } from '../leaf/solve.js';
import { storedRound, type RoundKind } from '../runs/record.js';
import { runPageUrl } from '../runs/url.js';
import type { JobRun, LiveRun } from './roundVariant.js';

/**
 * The round's page (docs/trajectory-pages.md): its number is drawn once the model has run, so the pull request, the
 * approval check and the status comment can link it; the round is stored when it ends, whatever the outcome. A store
 * that fails costs the link, never the round.
 */
export async function reserveRunPage(run: LiveRun, kind: RoundKind): Promise<void> {
  const store = run.ctx.trajectoryStore;
  if (!store) return;
  const { owner, repo, issueNumber } = run.data;
  try {
    const round = await store.nextRound({ owner, repo, issueNumber });
    const url = run.ctx.publicUrl ? runPageUrl(run.ctx.publicUrl, { owner, repo, issueNumber, round }) : undefined;
    run.page = { round, kind, url };
    if (url) run.status.meta.runUrl = url;
  } catch (err) {
    run.log.warn({ err }, 'could not reach the trajectory store; this round gets no run page');
  }
}

/** The page of the whole run (every round, the first draft's included), where this round has a page. */
export function wholeRunUrl(run: JobRun): string | undefined {
  if (!run.page?.url || !run.ctx.publicUrl) return undefined;
  const { owner, repo, issueNumber } = run.data;
  return runPageUrl(run.ctx.publicUrl, { owner, repo, issueNumber });
}

/** Stores the round the page shows, with how it ended. */
export async function storeRunPage(run: JobRun, solved: SolveResult, state: StatusState): Promise<void> {
  const store = run.ctx.trajectoryStore;
  if (!store || !run.page) return;
  const { owner, repo, issueNumber, followUp } = run.data;
  const round = storedRound(solved.trajectory, {
    owner,
    repo,
    issueNumber,
    round: run.page.round,
    kind: run.page.kind,
    trigger: `${run.data.trigger} by ${run.data.triggeredBy.login}`,
    result: resultText(state),
    pullNumber: state.kind === 'pull_request' ? state.number : followUp?.pullNumber,
    issueTitle: run.data.title,
    tests: solved.testResults,
    patch: solved.patch,
    verification: run.page.verification,
  });
  try {
    const bytes = await store.putRound(round);
    run.log.info({ round: run.page.round, bytes, store: store.description }, 'round stored for its run page');
  } catch (err) {
    run.log.warn({ err, round: run.page.round }, 'could not store the round for its run page');
  }
}

function resultText(state: StatusState): string {
  switch (state.kind) {
    case 'pull_request':
      return `pushed to #${state.number}`;
    case 'no_patch':
      return 'no change';
    case 'cancelled':
      return 'cancelled';
    case 'failed':
      return 'failed';
    default:
      return state.kind;
  }
}
