import type { IssueKey } from '../queue/attempts.js';
import { clampIssueBody, type JobData } from '../queue/schema.js';
import type { IssueCommentCreatedPayload, IssueLabeledPayload } from './payloads.js';

type IssuePayload = { repository: { owner: { login: string }; name: string }; issue: { number: number } };

export function issueKey(p: IssuePayload): IssueKey {
  return { owner: p.repository.owner.login, repo: p.repository.name, issueNumber: p.issue.number };
}

/** The job for an attempt on an issue, from the label or comment that asked for it. */
export function jobData(
  p: IssueLabeledPayload | IssueCommentCreatedPayload,
  key: IssueKey,
  attempt: number,
  trigger: 'label' | 'comment',
  deliveryId: string,
  at: Date,
  commentId?: number,
): JobData {
  const by = 'comment' in p ? p.comment.user : p.sender;
  return {
    installationId: p.installation.id,
    owner: key.owner,
    repo: key.repo,
    issueNumber: key.issueNumber,
    title: p.issue.title.slice(0, 1024),
    body: clampIssueBody(p.issue.body),
    defaultBranch: p.repository.default_branch,
    triggeredBy: { login: by.login, id: by.id },
    attempt,
    trigger,
    ...(commentId ? { commentId } : {}),
    deliveryId: deliveryId.slice(0, 100),
    enqueuedAt: at.toISOString(),
  };
}
