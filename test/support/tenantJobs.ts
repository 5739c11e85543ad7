import { randomUUID } from 'node:crypto';
import type { FollowUpRequest } from '../../src/queue/followUps.js';
import type { JobData } from '../../src/queue/schema.js';

/** The queue tests' issue, Octo-Org/Hello.World#7: its first attempt, from the label, one delivery. */
export function sampleJob(over: Partial<JobData> = {}): JobData {
  return {
    installationId: 1,
    owner: 'Octo-Org',
    repo: 'Hello.World',
    issueNumber: 7,
    title: 'Fix the thing',
    body: 'It is broken.',
    defaultBranch: 'main',
    triggeredBy: { login: 'octocat', id: 1 },
    attempt: 1,
    trigger: 'label',
    deliveryId: randomUUID(),
    enqueuedAt: new Date().toISOString(),
    ...over,
  };
}

/** A `/frognano` review on the bot's pull request #12 for that issue (head `frognano/issue-7`). */
export function sampleFollowUp(
  followUp: Partial<FollowUpRequest['followUp']> = {},
  over: Partial<JobData> = {},
): FollowUpRequest {
  return {
    ...sampleJob({ trigger: 'review', ...over }),
    followUp: {
      pullNumber: 12,
      headBranch: 'frognano/issue-7',
      headSha: 'a'.repeat(40),
      baseBranch: 'main',
      feedback: '/frognano please rename it',
      inlineComments: [],
      omittedComments: 0,
      source: 'review',
      ...followUp,
    },
  };
}

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
