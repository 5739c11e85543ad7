import type { Redis } from 'ioredis';
import { redact } from '../util/redact.js';
import { issueSlug } from '../queue/attempts.js';
import { withRedisLock } from '../queue/lock.js';
import { blockedRequestsLine, type BlockedNetworkRequest } from './blockedRequests.js';
import { RUN_PAGE_NOTE, safeRunUrl } from './runLink.js';
import { defang, untrustedBlock, untrustedInline, untrustedLine } from './untrusted.js';
import { botKey } from '../queue/keys.js';

/** Hidden marker that identifies the bot's single status comment on an issue. */
export const STATUS_MARKER = '<!-- frognano:status -->';

export type StatusState =
  | { kind: 'queued'; position?: number }
  /** `detail` is the runner's latest step and may quote the model (a tool call); `note` is the bot's own words. */
  | { kind: 'running'; runner?: string; turn?: number; maxTurns?: number; detail?: string; note?: string }
  | {
      kind: 'pull_request';
      url: string;
      number: number;
      summary?: string;
      /** One line on the verdict (src/github/verification.ts verificationStatusLine; already neutralised). */
      verification?: string;
    }
  | { kind: 'no_patch'; reason: string }
  | { kind: 'failed'; reason: string }
  | { kind: 'cancelled'; by?: string };

export interface StatusMeta {
  /** 1 for the first run; shown so maintainers can tell retries apart. */
  attempt?: number;
  jobId?: string;
  /** Who started this attempt (label or comment author). */
  triggeredBy?: string;
  updatedAt?: Date;
  /** Set for a follow-up round on the bot's pull request: the comment speaks of rounds and pushed commits. */
  round?: number;
  /** The finished round's page (runPageUrl), linked once the round has ended. */
  runUrl?: string;
  /** What an automatic round answers (`Answering failing CI: \`test\`.`): no person asked for it. */
  answering?: string;
  /** What the egress proxy refused the round's setup commands: one line once the round has ended. */
  blockedRequests?: BlockedNetworkRequest[];
}

export interface IssueRef {
  owner: string;
  repo: string;
  issueNumber: number;
}

/** Minimal slice of Octokit we use, so both Probot's and @octokit/rest's clients fit. */
export interface StatusOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: any; status: number }>;
}

const MAX_REASON_CHARS = 1500;
const MAX_SUMMARY_CHARS = 3000;

/** Logins, job ids and the runner's own description: redacted, capped, and unable to forge our marker. */
function clean(text: string, max: number): string {
  let t = redact(text).replace(/<!--/g, '&lt;!--').trim();
  if (t.length > max) t = `${t.slice(0, max)}… [${t.length - max} more characters]`;
  return t;
}

/**
 * The runner's reasons are its own sentences, but they can quote a path or limit the model chose: short ones
 * stay a one-line quote, defanged; anything else goes in a fence so it cannot break the layout.
 */
function quoteReason(reason: string): string {
  const t = redact(reason).trim();
  if (!t) return '';
  if (!t.includes('\n') && t.length <= 1000 && !/^[#>\-+*=|<]|^\d+[.)]/.test(t)) return `> ${defang(t)}`;
  return untrustedBlock(t, MAX_REASON_CHARS);
}

function ordinal(n: number): string {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return `${n}${s[(v - 20) % 10] ?? s[v] ?? s[0]}`;
}

/** How every cancelRequestedDetail note starts; the app recognises a running state it wrote by it. */
export const CANCEL_REQUESTED = 'Cancellation requested';

/**
 * The running comment's note after `/frognano cancel`. The app writes it and the runner keeps it in its
 * progress updates until it stops, so the maintainer's request never seems to vanish.
 */
export function cancelRequestedDetail(by?: string): string {
  return `${CANCEL_REQUESTED}${by ? ` by @${by}` : ''}; the runner stops at its next step.`;
}

/**
 * The running state for a runner's progress, as both the app (from the job's stored progress) and the
 * runner (in its own updates) write it: once a cancel was requested, its note replaces the latest step.
 */
export function runningState(
  p: { runner?: string; turn?: number; maxTurns?: number; detail?: string },
  cancel: { by?: string } | null,
): StatusState {
  if (cancel)
    return {
      kind: 'running',
      runner: p.runner,
      turn: p.turn,
      maxTurns: p.maxTurns,
      note: cancelRequestedDetail(cancel.by),
    };
  return { kind: 'running', runner: p.runner, turn: p.turn, maxTurns: p.maxTurns, detail: p.detail };
}

const RETRY_HINT =
  'A maintainer can comment `/frognano retry` to start a new attempt (adding the label again does not re-run it).';

/** One-line summary of a state, used in replies to `/frognano status`. */
export function summarizeStatus(state: StatusState, round?: number): string {
  switch (state.kind) {
    case 'queued':
      return state.position ? `queued (${ordinal(state.position)} in line)` : 'queued';
    case 'running': {
      const turn = state.turn ? ` (turn ${state.turn}${state.maxTurns ? ` of ${state.maxTurns}` : ''})` : '';
      return `running${turn}`;
    }
    case 'pull_request':
      return round ? `new commits pushed to #${state.number}` : `draft pull request #${state.number} opened`;
    case 'no_patch':
      return 'finished without proposing a change';
    case 'failed':
      return 'stopped with an error';
    case 'cancelled':
      return state.by ? `cancelled by @${state.by}` : 'cancelled';
  }
}

export function renderStatusComment(state: StatusState, meta: StatusMeta = {}): string {
  const lines: string[] = [STATUS_MARKER];
  // A follow-up round speaks of rounds and pushed commits (its running state reads like any other).
  if (meta.round && state.kind !== 'running') lines.push(...roundLines(state, meta.round));
  else lines.push(...attemptLines(state, meta));
  const runUrl = meta.runUrl && state.kind !== 'queued' && state.kind !== 'running' ? safeRunUrl(meta.runUrl) : null;
  if (runUrl) lines.push('', `🔎 [Every step of this run](${runUrl}) (${RUN_PAGE_NOTE}).`);
  const blocked = state.kind !== 'queued' && state.kind !== 'running' && blockedRequestsLine(meta.blockedRequests);
  if (blocked) lines.push('', blocked);
  if (meta.answering) lines.push('', untrustedLine(meta.answering, 500));
  lines.push('', footerLine(meta));
  return lines.join('\n');
}

/** The model's summary, fenced as untrusted text; nothing when it gave none. */
function summaryLines(summary: string | undefined): string[] {
  if (!summary) return [];
  return [
    '',
    "The model's summary (its own words, unreviewed):",
    '',
    untrustedBlock(redact(summary), MAX_SUMMARY_CHARS),
  ];
}

/** The body for an issue's attempt (and a round's running state). */
function attemptLines(state: StatusState, meta: StatusMeta): string[] {
  const attempt = meta.attempt && meta.attempt > 1 ? ` (attempt ${meta.attempt})` : '';
  const lines: string[] = [];
  switch (state.kind) {
    case 'queued': {
      lines.push(`### ⏳ frognano: queued${attempt}`);
      const where = state.position ? `It is **${ordinal(state.position)}** in line` : 'It is waiting';
      lines.push(
        '',
        `${where} for a runner. FrogNano will read the repository, try a fix in an isolated sandbox and open a **draft** pull request for review.`,
        '',
        'Comment `/frognano cancel` to withdraw it, or `/frognano status` to refresh this comment.',
      );
      break;
    }
    case 'running': {
      lines.push(
        meta.round ? `### 🛠️ frognano: working on round ${meta.round}` : `### 🛠️ frognano: working on it${attempt}`,
      );
      const parts: string[] = [];
      if (state.runner) parts.push(`Runner: ${clean(state.runner, 200)}`);
      if (state.turn) parts.push(`Turn ${state.turn}${state.maxTurns ? ` of at most ${state.maxTurns}` : ''}`);
      lines.push('', parts.length ? `${parts.join(' · ')}.` : 'A runner has picked up this issue.');
      if (state.note) lines.push('', clean(state.note, MAX_REASON_CHARS));
      else if (state.detail) lines.push('', untrustedInline(redact(state.detail), 300));
      lines.push('', 'Comment `/frognano cancel` to stop it.');
      break;
    }
    case 'pull_request': {
      lines.push(`### ✅ frognano: draft pull request #${state.number} opened${attempt}`);
      lines.push('', `Proposed change: ${state.url}`);
      if (state.verification) lines.push('', state.verification);
      lines.push(...summaryLines(state.summary));
      lines.push(
        '',
        'The pull request is a **draft** written by a model: review the diff and the test results before approving. Nothing merges without a human.',
        '',
        RETRY_HINT,
      );
      break;
    }
    case 'no_patch': {
      lines.push(`### 🤷 frognano: no change proposed${attempt}`);
      lines.push('', 'The run ended without a patch worth opening a pull request for.');
      const q = quoteReason(state.reason);
      if (q) lines.push('', q);
      lines.push(
        '',
        `Adding detail to the issue (expected behaviour, file names, a failing test) often helps. ${RETRY_HINT}`,
      );
      break;
    }
    case 'failed': {
      lines.push(`### ❌ frognano: failed${attempt}`);
      lines.push('', 'The attempt stopped with an error; no pull request was opened.');
      const q = quoteReason(state.reason);
      if (q) lines.push('', q);
      lines.push('', RETRY_HINT);
      break;
    }
    case 'cancelled': {
      lines.push(`### 🛑 frognano: cancelled${attempt}`);
      lines.push(
        '',
        state.by
          ? `Cancelled by @${clean(state.by, 100)}. No pull request was opened.`
          : 'The attempt was cancelled. No pull request was opened.',
      );
      lines.push('', RETRY_HINT);
      break;
    }
  }
  return lines;
}

/** Who started it, the job, and when the comment was last written. */
function footerLine(meta: StatusMeta): string {
  const footer: string[] = [];
  if (meta.triggeredBy) footer.push(`started by @${clean(meta.triggeredBy, 100)}`);
  if (meta.jobId) footer.push(`job \`${clean(meta.jobId, 200)}\``);
  footer.push(
    `updated ${(meta.updatedAt ?? new Date())
      .toISOString()
      .replace(/\.\d{3}Z$/, 'Z')
      .replace('T', ' ')}`,
  );
  return `<sub>frognano-bot · ${footer.join(' · ')}</sub>`;
}

const ROUND_HINT =
  'Comment `/frognano <what to change>`, or submit a review that contains `/frognano`, to ask for another round.';

/** The status comment of a follow-up round, on the pull request: rounds and commits, not attempts and new PRs. */
function roundLines(state: Exclude<StatusState, { kind: 'running' }>, round: number): string[] {
  switch (state.kind) {
    case 'queued': {
      const where = state.position ? `It is **${ordinal(state.position)}** in line` : 'It is waiting';
      return [
        `### ⏳ frognano: round ${round} queued`,
        '',
        `${where} for a runner. FrogNano will continue this pull request's branch from its current head with the feedback, and push new commits for review.`,
        '',
        'Comment `/frognano cancel` to withdraw it, or `/frognano status` to refresh this comment.',
      ];
    }
    case 'pull_request': {
      const out = [
        `### ✅ frognano: round ${round} pushed`,
        '',
        'New commits are on this pull request. The approval check waits for a fresh approval of the new head.',
      ];
      if (state.verification) out.push('', state.verification);
      out.push(...summaryLines(state.summary));
      return [...out, '', ROUND_HINT];
    }
    case 'no_patch': {
      const q = quoteReason(state.reason);
      return [
        `### 🤷 frognano: round ${round} changed nothing`,
        '',
        'Nothing was pushed.',
        ...(q ? ['', q] : []),
        '',
        `More detail (file names, the expected result) often helps. ${ROUND_HINT}`,
      ];
    }
    case 'failed': {
      const q = quoteReason(state.reason);
      return [
        `### ❌ frognano: round ${round} failed`,
        '',
        'The round stopped with an error; nothing was pushed.',
        ...(q ? ['', q] : []),
        '',
        ROUND_HINT,
      ];
    }
    case 'cancelled':
      return [
        `### 🛑 frognano: round ${round} cancelled`,
        '',
        `${state.by ? `Cancelled by @${clean(state.by, 100)}.` : 'The round was cancelled.'} Nothing was pushed.`,
        '',
        ROUND_HINT,
      ];
  }
}

export function statusCacheKey(ref: IssueRef): string {
  return botKey('status', issueSlug(ref));
}

const CACHE_TTL_SECONDS = 90 * 24 * 3600;

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { status?: number }).status === 404;
}

async function findStatusComment(octokit: StatusOctokit, ref: IssueRef): Promise<number | null> {
  // Issues rarely have thousands of comments; cap the walk so a huge thread cannot stall the bot.
  for (let page = 1; page <= 30; page++) {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: ref.owner,
      repo: ref.repo,
      issue_number: ref.issueNumber,
      per_page: 100,
      page,
    });
    const list = Array.isArray(data) ? data : [];
    // Only our own (bot) comments count: a human quoting the marker must not hijack the status.
    const hit = list.find(
      (c: any) => typeof c?.body === 'string' && c.body.includes(STATUS_MARKER) && c.user?.type === 'Bot',
    );
    if (hit) return hit.id as number;
    if (list.length < 100) return null;
  }
  return null;
}

export interface UpsertResult {
  id: number;
  url?: string;
  created: boolean;
}

/**
 * Creates or edits the single status comment on an issue. The comment id is cached in Redis; when
 * the cache is empty (or the comment was deleted) the issue's comments are searched for the marker,
 * and only then is a new comment created. A per-issue lock keeps concurrent updates from creating two.
 */
export async function upsertStatusComment(
  octokit: StatusOctokit,
  redis: Redis,
  ref: IssueRef,
  state: StatusState,
  meta: StatusMeta = {},
): Promise<UpsertResult> {
  return (await updateStatusComment(octokit, redis, ref, async () => ({ state, meta })))!;
}

/**
 * Like upsertStatusComment, but decides the state while holding the issue's lock: the app reads the
 * job's live state here, so it can never overwrite a newer state a runner wrote meanwhile.
 * `compute` returning null leaves the comment alone.
 */
export async function updateStatusComment(
  octokit: StatusOctokit,
  redis: Redis,
  ref: IssueRef,
  compute: () => Promise<{ state: StatusState; meta?: StatusMeta } | null>,
): Promise<UpsertResult | null> {
  const key = statusCacheKey(ref);
  return withRedisLock(redis, `${key}:lock`, async () => {
    const next = await compute();
    if (!next) return null;
    const body = renderStatusComment(next.state, next.meta ?? {});
    const update = async (id: number): Promise<UpsertResult> => {
      const { data } = await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
        owner: ref.owner,
        repo: ref.repo,
        comment_id: id,
        body,
      });
      return { id, url: data?.html_url as string | undefined, created: false };
    };
    const cached = Number(await redis.get(key));
    if (Number.isInteger(cached) && cached > 0) {
      try {
        return await update(cached);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await redis.del(key); // someone deleted the comment: fall through and find or recreate it
      }
    }
    const found = await findStatusComment(octokit, ref);
    if (found) {
      await redis.set(key, String(found), 'EX', CACHE_TTL_SECONDS);
      return update(found);
    }
    const { data } = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: ref.owner,
      repo: ref.repo,
      issue_number: ref.issueNumber,
      body,
    });
    await redis.set(key, String(data.id), 'EX', CACHE_TTL_SECONDS);
    return { id: data.id as number, url: data?.html_url as string | undefined, created: true };
  });
}

/** The cached status comment id, if known (for linking from replies). */
export async function cachedStatusCommentId(redis: Redis, ref: IssueRef): Promise<number | null> {
  const v = Number(await redis.get(statusCacheKey(ref)));
  return Number.isInteger(v) && v > 0 ? v : null;
}
