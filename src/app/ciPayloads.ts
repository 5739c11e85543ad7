import { z } from 'zod';
import type { CiEvent } from '../queue/ciJudge.js';
import { Installation, Repository } from './payloads.js';

/**
 * The four events that say CI finished on a commit, as one shape: which commit, on which branches. Check runs and
 * suites (GitHub Actions and other apps), workflow runs (Actions), and commit statuses (third-party CI).
 */
export type { CiEvent };

const sha = z.string().regex(/^[0-9a-f]{40}$/);
const common = { repository: Repository, installation: Installation };

export const CheckSuiteCompleted = z.object({
  action: z.literal('completed'),
  check_suite: z.object({ head_sha: sha, head_branch: z.string().nullable() }),
  ...common,
});
export const CheckRunCompleted = z.object({
  action: z.literal('completed'),
  check_run: z.object({
    name: z.string(),
    head_sha: sha,
    check_suite: z.object({ head_branch: z.string().nullable() }),
  }),
  ...common,
});
export const WorkflowRunCompleted = z.object({
  action: z.literal('completed'),
  workflow_run: z.object({ head_sha: sha, head_branch: z.string().nullable() }),
  ...common,
});
export const StatusEvent = z.object({
  sha,
  state: z.string(),
  context: z.string(),
  branches: z.array(z.object({ name: z.string(), commit: z.object({ sha: z.string() }) })),
  ...common,
});

type Common = { repository: z.infer<typeof Repository>; installation: z.infer<typeof Installation> };

function base(event: string, p: Common, headSha: string, branches: (string | null)[]): CiEvent {
  return {
    event,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    installationId: p.installation.id,
    defaultBranch: p.repository.default_branch,
    headSha,
    branches: branches.filter((b): b is string => !!b),
  };
}

export function fromCheckSuite(p: z.infer<typeof CheckSuiteCompleted>): CiEvent {
  return base('check_suite.completed', p, p.check_suite.head_sha, [p.check_suite.head_branch]);
}

export function fromCheckRun(p: z.infer<typeof CheckRunCompleted>): CiEvent {
  const ev = base('check_run.completed', p, p.check_run.head_sha, [p.check_run.check_suite.head_branch]);
  return { ...ev, checkName: p.check_run.name };
}

export function fromWorkflowRun(p: z.infer<typeof WorkflowRunCompleted>): CiEvent {
  return base('workflow_run.completed', p, p.workflow_run.head_sha, [p.workflow_run.head_branch]);
}

/** A status names the branches whose head is the commit; a pending one is not an end of anything. */
export function fromStatus(p: z.infer<typeof StatusEvent>): CiEvent | null {
  if (p.state === 'pending') return null;
  return base(
    'status',
    p,
    p.sha,
    p.branches.filter((b) => b.commit.sha === p.sha).map((b) => b.name),
  );
}
