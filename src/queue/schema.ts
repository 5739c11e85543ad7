import { z } from 'zod';
import { issueSlug } from './attempts.js';

/** BullMQ queue name (DESIGN.md). */
export const QUEUE_NAME = 'frognano';

/** Issue bodies beyond this are cut (with a note) before they reach the queue and the model. */
export const MAX_ISSUE_BODY_CHARS = 60_000;

const login = z.string().min(1).max(100);
const repoPart = z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'not a GitHub owner/repository name');

export const JobDataSchema = z.object({
  installationId: z.number().int().positive(),
  owner: repoPart,
  repo: repoPart,
  issueNumber: z.number().int().positive(),
  title: z.string().max(1024),
  body: z.string().max(MAX_ISSUE_BODY_CHARS + 200),
  /** Branch the work starts from; the per-repo config may override it in the runner. */
  defaultBranch: z.string().min(1).max(255),
  triggeredBy: z.object({ login, id: z.number().int().nonnegative().optional() }),
  /** 1 for the first run; each `/frognano retry` adds one. */
  attempt: z.number().int().min(1).max(1000),
  trigger: z.enum(['label', 'comment']),
  /** Comment that triggered the job (for reactions and replies). */
  commentId: z.number().int().positive().optional(),
  /** X-GitHub-Delivery of the webhook that created the job (for tracing redeliveries). */
  deliveryId: z.string().max(100).optional(),
  enqueuedAt: z.string().datetime(),
});
export type JobData = z.infer<typeof JobDataSchema>;

/** What a finished job returns (stored by BullMQ as the job's return value). */
export const JobResultSchema = z.object({
  outcome: z.enum(['pull_request', 'no_patch', 'refused', 'cancelled']),
  pullRequestUrl: z.string().url().optional(),
  pullRequestNumber: z.number().int().positive().optional(),
  branch: z.string().optional(),
  exitReason: z.string(),
  reason: z.string().optional(),
  turns: z.number().int().nonnegative(),
  elapsedSeconds: z.number().nonnegative(),
  trajectoryPath: z.string().optional(),
});
export type JobResult = z.infer<typeof JobResultSchema>;

/**
 * Deterministic job id: one job per (repository, issue, attempt), so redelivered webhooks and
 * double labels collapse onto the same BullMQ job. GitHub names are case-insensitive, hence the
 * lower-cased issueSlug. BullMQ forbids ':' in custom ids; none of these parts can contain one.
 */
export function jobIdFor(d: Pick<JobData, 'owner' | 'repo' | 'issueNumber' | 'attempt'>): string {
  return `${issueSlug(d)}@${d.attempt}`;
}

/** Cuts an issue body to MAX_ISSUE_BODY_CHARS, saying so, so huge issues are queued rather than rejected. */
export function clampIssueBody(body: string | null | undefined): string {
  const text = body ?? '';
  if (text.length <= MAX_ISSUE_BODY_CHARS) return text;
  const dropped = text.length - MAX_ISSUE_BODY_CHARS;
  return `${text.slice(0, MAX_ISSUE_BODY_CHARS)}\n\n[issue body truncated: ${dropped} more characters]`;
}
