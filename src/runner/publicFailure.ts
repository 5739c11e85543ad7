/**
 * What the issue is told when a job fails: what happened, in words a maintainer can act on, and where the
 * detail is. Never the error itself: git's stderr, host paths, the model server's URL, Redis URLs, stack
 * traces and error class names stay in the runner's log, which records every failure with the job id.
 */

/** The pointer every failure text ends with. */
export function whereToLook(jobId: string): string {
  return `The runner's log has the details (job \`${jobId.replace(/`/g, "'")}\`).`;
}

const RUNNER_SIDE =
  'This is a problem on the runner, not in the repository: its operator can fix it, then comment `/frognano retry`.';

export const publicFailure = {
  token: (jobId: string) =>
    `The runner could not get a GitHub token for this repository. Check that the app is still installed and has access to it. ${whereToLook(jobId)}`,
  clone: (jobId: string, branch: string, fromConfig: boolean) =>
    `Could not clone the repository (branch \`${branch}\`). Check that the branch exists${fromConfig ? ' (`baseBranch` in `.github/frognano.yml`)' : ''} and that the app can read the repository. ${whereToLook(jobId)}`,
  sandbox: (jobId: string) =>
    `The runner could not start the sandbox the model works in. ${RUNNER_SIDE} ${whereToLook(jobId)}`,
  model: (jobId: string) => `The model server stopped answering during the run. ${RUNNER_SIDE} ${whereToLook(jobId)}`,
  tool: (jobId: string) => `The sandbox failed while the model was working. ${RUNNER_SIDE} ${whereToLook(jobId)}`,
  patch: (jobId: string) =>
    `The model's change does not apply to the base branch (it may have moved during the run). Comment \`/frognano retry\` to start again from the current branch. ${whereToLook(jobId)}`,
  push: (jobId: string, branch: string) =>
    `Could not push the branch \`${branch}\`. Check that the app may write this repository's contents and that no branch protection rule or ruleset covers \`frognano/*\` branches. ${whereToLook(jobId)}`,
  pullRequest: (jobId: string, branch: string) =>
    `The branch \`${branch}\` was pushed, but opening its pull request failed. Check that the app may write pull requests, or open one from the branch by hand. ${whereToLook(jobId)}`,
  unexpected: (jobId: string, during: string) => `The runner failed ${during}. ${whereToLook(jobId)}`,
  noResult: 'The runner stopped without a result.',
} as const;

/** Phases of a round, as its progress names them, in words for `publicFailure.unexpected`. */
export function duringPhase(phase: string | undefined): string {
  switch (phase) {
    case 'cloning':
      return 'while preparing the repository';
    case 'solving':
      return 'while the model was working';
    case 'verifying':
      return 'while verifying the change';
    case 'publishing':
      return 'while publishing the change';
    default:
      return 'before the model started';
  }
}

/**
 * An error whose class says it may be shown on the issue as is (for example a workspace disk budget that was
 * exceeded): it carries `publicReason`, a sentence written for maintainers without any runner internals.
 */
export function ownPublicReason(err: unknown): string | null {
  const r = (err as { publicReason?: unknown } | null)?.publicReason;
  return typeof r === 'string' && r.trim() ? r.trim() : null;
}
