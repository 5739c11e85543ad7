import { z } from 'zod';
import { issueSlug } from './attempts.js';
import { CiFixSchema } from './ciFix.js';
import { RepairRequestSchema, VerifyRepairSchema } from './verifyRepair.js';

/** BullMQ queue name (DESIGN.md). */
export const QUEUE_NAME = 'frognano';

/** Issue bodies beyond this are cut (with a note) before they reach the queue and the model. */
export const MAX_ISSUE_BODY_CHARS = 60_000;

const login = z.string().min(1).max(100);
const sha = z.string().regex(/^[0-9a-f]{40}$/, 'not a commit sha');

/** Caps on review feedback carried in a job: GitHub allows huge reviews; the model's context does not. */
export const MAX_FEEDBACK_CHARS = 20_000;
export const MAX_INLINE_COMMENTS = 50;
export const MAX_DIFF_HUNK_CHARS = 3_000;
export const MAX_GUIDANCE_CHARS = 8_000;

/** One inline review comment, with where it points (file, line, the diff hunk GitHub showed the reviewer). */
export const InlineCommentSchema = z.object({
  author: login,
  body: z.string().max(MAX_FEEDBACK_CHARS),
  path: z.string().min(1).max(1000),
  /** Line in the file the comment is on (the new side); null when GitHub no longer maps it (outdated). */
  line: z.number().int().positive().nullable(),
  startLine: z.number().int().positive().nullable().optional(),
  diffHunk: z.string().max(MAX_DIFF_HUNK_CHARS + 100),
});
export type InlineComment = z.infer<typeof InlineCommentSchema>;

/** At most this many asks wait for a pull request's next round (src/queue/asks.ts); more are refused. */
export const MAX_WAITING_ASKS = 10;

/**
 * One writer's ask that a follow-up round addresses: a `/frognano <text>` comment or a review containing
 * `/frognano`. A round that merges asks which waited while another round ran carries each of them.
 */
export const AskSchema = z.object({
  author: z.object({ login, id: z.number().int().nonnegative().optional() }),
  source: z.enum(['comment', 'review', 'ci', 'verify']),
  /** The review's or comment's text. */
  feedback: z.string().max(MAX_FEEDBACK_CHARS + 200),
  inlineComments: z.array(InlineCommentSchema).max(MAX_INLINE_COMMENTS).default([]),
  omittedComments: z.number().int().nonnegative().default(0),
  reviewId: z.number().int().positive().optional(),
  commentId: z.number().int().positive().optional(),
  askedAt: z.string().datetime(),
});
export type Ask = z.infer<typeof AskSchema>;

/**
 * A follow-up round on the bot's own pull request: a writer's `/frognano <text>` on it, or a review that
 * contains `/frognano`. The job continues from the PR branch's head and pushes to the same branch.
 */
export const FollowUpSchema = z.object({
  pullNumber: z.number().int().positive(),
  /** The PR's branch (always one the bot pushed: `frognano/...`). */
  headBranch: z.string().min(1).max(255),
  /** Head when the request was made; a newer head (a human pushed) is built on, never overwritten. */
  headSha: sha,
  baseBranch: z.string().min(1).max(255),
  /** 1 for the first follow-up on this PR. */
  round: z.number().int().min(1).max(1000),
  /** The review's or comment's text (the `/frognano` line included). */
  feedback: z.string().max(MAX_FEEDBACK_CHARS + 200),
  inlineComments: z.array(InlineCommentSchema).max(MAX_INLINE_COMMENTS).default([]),
  /** How many inline comments did not fit. */
  omittedComments: z.number().int().nonnegative().default(0),
  /** `ci`: an automatic round that answers failing checks on the head (the job's `ciFix`). */
  source: z.enum(['comment', 'review', 'ci', 'verify']),
  reviewId: z.number().int().positive().optional(),
  /**
   * Every ask this round addresses, oldest first, when it merges asks that waited for it; the fields above then
   * repeat the oldest one. Absent in a round for a single ask (and in jobs queued before asks could wait).
   */
  asks: z
    .array(AskSchema)
    .min(1)
    .max(MAX_WAITING_ASKS + 1)
    .optional(),
});
export type FollowUp = z.infer<typeof FollowUpSchema>;

/** The asks a follow-up round addresses, oldest first (one, from the fields, when the round carries no list). */
export function asksOf(f: FollowUp, by: { login: string; id?: number }, askedAt: string): Ask[] {
  if (f.asks?.length) return f.asks;
  const { feedback, inlineComments, omittedComments, source, reviewId } = f;
  return [
    { author: by, source, feedback, inlineComments, omittedComments, ...(reviewId ? { reviewId } : {}), askedAt },
  ];
}
const repoPart = z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, 'not a GitHub owner/repository name');

/** A Docker image reference, as an eval instance's image may be named (`--image-template`'s result). */
export const IMAGE_REF = /^[a-z0-9][a-z0-9._\-/:@]{0,254}$/;
/** An eval run's tenant in the fair share and the quotas: `eval:<name>` (lower case, as the quotas file's keys). */
export const EVAL_TENANT = /^eval:[a-z0-9][a-z0-9_.-]{0,63}$/;
/** SWE-bench problem statements are a few KB; one beyond this is not an issue text. */
export const MAX_PROBLEM_STATEMENT_CHARS = 200_000;

/**
 * One SWE-bench instance as a runner's eval round needs it (`frognano eval --queue`): the fields the run reads, no
 * more (the harness's FAIL_TO_PASS and the rest stay with the CLI).
 */
export const EvalInstanceSchema = z.strictObject({
  instance_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/, 'instance_id must be a plain name'),
  repo: z.string().min(1).max(200),
  base_commit: sha,
  problem_statement: z.string().min(1).max(MAX_PROBLEM_STATEMENT_CHARS),
});

/**
 * An eval instance queued as its own kind of round (src/runner/evalRound.ts): run in its image at /testbed as
 * `frognano eval` runs it, ending in a prediction stored for the CLI (src/queue/evalResults.ts), never on GitHub.
 */
export const EvalJobSchema = z.strictObject({
  /** Who the run is charged to: the fair share's installation and the quotas' tenant. */
  tenant: z.string().regex(EVAL_TENANT, 'an eval tenant is eval:<name> (lower-case letters, digits, _ . -)'),
  /** The eval run (its --out directory's id): with the instance id, the job's deterministic id. */
  runId: z.string().regex(/^[0-9a-f]{16}$/, 'not an eval run id'),
  instance: EvalInstanceSchema,
  image: z.string().regex(IMAGE_REF, 'not a Docker image name'),
  /** Written to the model's ~/.bash_profile in the sandbox ('' for none), as `frognano eval --activate`. */
  activation: z.string().max(2000),
});
export type EvalJob = z.infer<typeof EvalJobSchema>;

export const JobDataSchema = z
  .object({
    /** 0 for an eval instance (it has no installation: it never touches GitHub), and only for one. */
    installationId: z.number().int().nonnegative(),
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
    trigger: z.enum(['label', 'comment', 'review', 'ci', 'verify', 'eval']),
    /** A writer's words for this attempt (`/frognano retry <guidance>`, `/frognano <guidance>`). */
    guidance: z
      .string()
      .max(MAX_GUIDANCE_CHARS + 200)
      .optional(),
    /** Set when this job is a follow-up round on the bot's pull request rather than a fresh attempt. */
    followUp: FollowUpSchema.optional(),
    /** Set with `followUp` (source `ci`) when the round answers failing CI on the pull request's head. */
    ciFix: CiFixSchema.optional(),
    /** Set with `followUp` (source `verify`) when the round answers a failing verification verdict. */
    verifyRepair: VerifyRepairSchema.optional(),
    /** Comment that triggered the job (for reactions and replies). */
    commentId: z.number().int().positive().optional(),
    /** X-GitHub-Delivery of the webhook that created the job (for tracing redeliveries). */
    deliveryId: z.string().max(100).optional(),
    enqueuedAt: z.string().datetime(),
    /** Set when the job is a SWE-bench instance of `frognano eval --queue` (evalJobData builds the rest). */
    eval: EvalJobSchema.optional(),
  })
  .refine(
    (d) => (d.installationId === 0) === (d.eval !== undefined) && (d.trigger === 'eval') === (d.eval !== undefined),
    {
      message: 'an eval job (and only one) has installation 0 and trigger eval',
      path: ['installationId'],
    },
  );
export type JobData = z.infer<typeof JobDataSchema>;

/**
 * The JobData of an eval instance: no installation, the instance's repository as owner/repo (for the logs), the
 * instance id as title; what the round reads is `eval`.
 */
export function evalJobData(job: EvalJob, enqueuedAt: string): JobData {
  const [owner, repo] = job.instance.repo.split('/');
  const plain = (s: string | undefined) => (s && /^[A-Za-z0-9_.-]{1,100}$/.test(s) ? s : 'instance');
  return {
    installationId: 0,
    owner: plain(owner),
    repo: plain(repo),
    issueNumber: 1,
    title: job.instance.instance_id,
    body: '',
    defaultBranch: 'HEAD',
    triggeredBy: { login: job.tenant },
    attempt: 1,
    trigger: 'eval',
    enqueuedAt,
    eval: job,
  };
}

/** What a finished job returns (stored by BullMQ as the job's return value). */
export const JobResultSchema = z.object({
  /** `prediction`: an eval round's end (its prediction and record are in src/queue/evalResults.ts). */
  outcome: z.enum(['pull_request', 'no_patch', 'refused', 'cancelled', 'prediction']),
  pullRequestUrl: z.string().url().optional(),
  pullRequestNumber: z.number().int().positive().optional(),
  branch: z.string().optional(),
  exitReason: z.string(),
  reason: z.string().optional(),
  turns: z.number().int().nonnegative(),
  elapsedSeconds: z.number().nonnegative(),
  trajectoryPath: z.string().optional(),
  /** The published change's verdict failed and the repository asks for a repair round (src/runner/verifyRepair.ts). */
  repair: RepairRequestSchema.optional(),
});
export type JobResult = z.infer<typeof JobResultSchema>;

/** Caps on what the app shows of a runner's progress (it is only shown; a runner of another version may send more). */
const MAX_PROGRESS_TEXT = 500;

/**
 * Progress a runner stores with `job.updateProgress(...)` (src/runner/progress.ts) and the app shows in the status
 * comment (src/app/jobStatus.ts). The app reads it with `readRunnerProgress`: field by field, dropping what it
 * cannot read.
 */
export const RunnerProgressSchema = z.object({
  runner: z.string(),
  phase: z.enum(['starting', 'cloning', 'solving', 'verifying', 'publishing']),
  turn: z.number().int().positive().optional(),
  maxTurns: z.number().int().positive().optional(),
  detail: z.string().optional(),
});
export type RunnerProgress = z.infer<typeof RunnerProgressSchema>;

const shownCount = z.number().finite().positive().transform(Math.floor).optional().catch(undefined);
const shownText = z
  .string()
  .min(1)
  .transform((s) => s.slice(0, MAX_PROGRESS_TEXT))
  .optional()
  .catch(undefined);

/** RunnerProgressSchema as the app reads it: each shown field on its own, anything unreadable left out. */
const ShownProgressSchema = RunnerProgressSchema.pick({ runner: true, turn: true, maxTurns: true, detail: true })
  .extend({ runner: shownText, turn: shownCount, maxTurns: shownCount, detail: shownText })
  .catch({});
export type ShownProgress = z.infer<typeof ShownProgressSchema>;

export function readRunnerProgress(p: unknown): ShownProgress {
  return ShownProgressSchema.parse(p);
}

/**
 * Deterministic job id: one job per (repository, issue, attempt), so redelivered webhooks and
 * double labels collapse onto the same BullMQ job. GitHub names are case-insensitive, hence the
 * lower-cased issueSlug. BullMQ forbids ':' in custom ids; none of these parts can contain one.
 */
export function jobIdFor(
  d: Pick<JobData, 'owner' | 'repo' | 'issueNumber' | 'attempt'> & {
    followUp?: Pick<FollowUp, 'pullNumber' | 'round'>;
    eval?: { runId: string; instance: { instance_id: string } };
  },
): string {
  // An eval instance: one job per (eval run, instance), so a resumed `frognano eval --queue` adds nothing twice.
  if (d.eval) return `eval-${d.eval.runId}-${d.eval.instance.instance_id}`;
  // A follow-up is keyed by its pull request and round, the PR's own "attempt": `/frognano cancel|status`
  // on the PR find it the way they find an issue's attempt.
  if (d.followUp)
    return `${issueSlug({ owner: d.owner, repo: d.repo, issueNumber: d.followUp.pullNumber })}@${d.followUp.round}`;
  return `${issueSlug(d)}@${d.attempt}`;
}

/** Cuts free text to `max` characters, saying how much was cut. */
export function clampText(text: string | null | undefined, max: number, what = 'text'): string {
  const t = text ?? '';
  if (t.length <= max) return t;
  return `${t.slice(0, max)}\n\n[${what} truncated: ${t.length - max} more characters]`;
}

/** Cuts an issue body to MAX_ISSUE_BODY_CHARS, saying so, so huge issues are queued rather than rejected. */
export function clampIssueBody(body: string | null | undefined): string {
  const text = body ?? '';
  if (text.length <= MAX_ISSUE_BODY_CHARS) return text;
  const dropped = text.length - MAX_ISSUE_BODY_CHARS;
  return `${text.slice(0, MAX_ISSUE_BODY_CHARS)}\n\n[issue body truncated: ${dropped} more characters]`;
}
