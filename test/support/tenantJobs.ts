import type { JobData } from '../../src/queue/schema.js';

/** Jobs of several tenants for the fair-share and quota tests: an issue's first attempt in `owner/repo`. */
export function issueJob(owner: string, repo: string, issueNumber: number): JobData {
  return {
    installationId: 1,
    owner,
    repo,
    issueNumber,
    title: 't',
    body: 'b',
    defaultBranch: 'main',
    triggeredBy: { login: 'octocat', id: 1 },
    attempt: 1,
    trigger: 'label',
    enqueuedAt: new Date().toISOString(),
  };
}

/** A follow-up round on pull request `pullNumber` of `owner/repo`. */
export function followUpJob(owner: string, repo: string, pullNumber: number): JobData {
  return {
    ...issueJob(owner, repo, pullNumber),
    trigger: 'comment',
    followUp: {
      pullNumber,
      headBranch: 'frognano/1-1',
      headSha: 'a'.repeat(40),
      baseBranch: 'main',
      round: 1,
      feedback: 'more',
      inlineComments: [],
      omittedComments: 0,
      source: 'comment',
    },
  };
}
