import type { Logger } from 'pino';
import { readDiscussion, type Discussion } from '../github/discussion.js';
import { visibleText } from '../github/untrusted.js';
import type { PermissionOctokit } from '../github/permissions.js';
import { readRepoFile } from '../github/repoFiles.js';
import type { RepoConfig } from '../github/repoConfig.js';
import type { TaskSection } from '../leaf/trajectory.js';
import { clampText, type Ask, type FollowUp, type JobData } from '../queue/schema.js';

/**
 * What the bot adds to the issue text for the model (LeafTask.context), in a fixed order: a maintainer's
 * guidance, the discussion by writers, the repository's instructions, and a follow-up's review feedback.
 * Every source is capped; hidden text (HTML comments, invisible characters) is stripped from what people wrote.
 */
export const CONTEXT_LIMITS = {
  guidanceChars: 4_000,
  discussionChars: 12_000,
  commentChars: 3_000,
  instructionsChars: 8_000,
  feedbackChars: 16_000,
};

/** What people wrote, as a reader of the rendered page sees it: no HTML comments, no invisible characters. */
function visible(text: string): string {
  return visibleText(text).trim();
}

export const AGENTS_FILE = 'AGENTS.md';
export const DEFAULT_INSTRUCTIONS_FILE = '.github/frognano.md';

/** Comments that are only a bot command (`/frognano status`) tell the model nothing. */
const BARE_COMMAND = /^\/frognano(\s+(retry|cancel|status|help))?\s*$/i;

export function guidanceSection(data: Pick<JobData, 'guidance' | 'triggeredBy'>): TaskSection[] {
  const text = visible(data.guidance ?? '');
  if (!text) return [];
  return [
    {
      kind: 'guidance',
      heading: `Guidance from the maintainer who started this run (${data.triggeredBy.login})`,
      text: clampText(text, CONTEXT_LIMITS.guidanceChars, 'guidance'),
    },
  ];
}

export function discussionSection(d: Discussion): TaskSection[] {
  const parts: string[] = [];
  let used = 0;
  let cut = 0;
  for (const c of d.comments) {
    const body = visible(c.body);
    if (!body || BARE_COMMAND.test(body)) continue;
    const entry = `${c.author} wrote (${c.createdAt.slice(0, 10)}):\n${clampText(body, CONTEXT_LIMITS.commentChars, 'comment')}`;
    if (used + entry.length > CONTEXT_LIMITS.discussionChars) {
      cut++;
      continue;
    }
    used += entry.length;
    parts.push(entry);
  }
  const leftOut = d.leftOut + cut;
  if (parts.length === 0 && leftOut === 0) return [];
  const note =
    leftOut > 0
      ? `${leftOut} comment${leftOut === 1 ? ' was' : 's were'} left out (only comments by people with write access to the repository are included).`
      : '';
  return [
    {
      kind: 'discussion',
      heading: 'Discussion on the issue (comments by maintainers, oldest first)',
      text: [...parts, note].filter(Boolean).join('\n\n'),
    },
  ];
}

/** AGENTS.md at the root, then `.github/frognano.md` (or the file `instructionsFile` names), from git's objects. */
export async function instructionsSections(
  repoDir: string,
  config: Pick<RepoConfig, 'instructionsFile'>,
): Promise<TaskSection[]> {
  const out: TaskSection[] = [];
  for (const file of [AGENTS_FILE, config.instructionsFile ?? DEFAULT_INSTRUCTIONS_FILE]) {
    const f = await readRepoFile(repoDir, file, CONTEXT_LIMITS.instructionsChars);
    const text = f ? visible(f.text) : '';
    if (!f || !text) continue;
    const cut = f.truncatedChars > 0 ? `\n\n[${file} truncated: ${f.truncatedChars} more characters]` : '';
    out.push({ kind: 'instructions', heading: `Repository instructions (${file})`, text: `${text}${cut}` });
  }
  return out;
}

/**
 * The reviewer's words, then each inline comment with its file, line and the diff hunk it was made on. A round
 * that merges asks which waited for it lists each ask that way, oldest first, under its author.
 */
export function feedbackSection(f: FollowUp, by: string): TaskSection[] {
  const merged = f.asks && f.asks.length > 1 ? f.asks : null;
  const what = merged
    ? `the ${merged.length} requests below (oldest first) in one set of changes`
    : 'the feedback below';
  const budget: FeedbackBudget = {
    parts: [
      `This is follow-up round ${f.round} on pull request #${f.pullNumber}. The repository already contains your earlier changes ` +
        `(branch ${f.headBranch}). Address ${what} with new changes on top of them.`,
    ],
    used: 0,
    omitted: 0,
  };
  const asks: Ask[] = merged ?? [{ ...f, author: { login: by }, askedAt: '' }];
  asks.forEach((ask, i) => addAsk(budget, ask, merged ? `Request ${i + 1} of ${merged.length}` : null));
  const { parts, omitted } = budget;
  if (omitted > 0) parts.push(`${omitted} more inline comment${omitted === 1 ? ' was' : 's were'} left out to fit.`);
  return [{ kind: 'feedback', heading: 'Review feedback on your pull request', text: parts.join('\n\n') }];
}

interface FeedbackBudget {
  parts: string[];
  used: number;
  omitted: number;
}

/** One ask: its author's words, then its inline comments while they fit (`label` names it among several). */
function addAsk(b: FeedbackBudget, ask: Ask, label: string | null): void {
  const general = visible(ask.feedback);
  const where = ask.source === 'review' ? ' in a review' : '';
  const when = label && ask.askedAt ? ` (${ask.askedAt.slice(0, 16).replace('T', ' ')} UTC)` : '';
  const words = general
    ? `:\n${clampText(general, CONTEXT_LIMITS.guidanceChars, 'feedback')}`
    : ' inline comments only.';
  if (general || label) b.parts.push(`${label ? `${label}: ` : ''}${ask.author.login} wrote${where}${when}${words}`);
  b.used = b.parts.join('\n\n').length;
  b.omitted += ask.omittedComments;
  for (const c of ask.inlineComments) {
    const body = visible(c.body);
    if (!body) continue;
    const line = c.line
      ? c.startLine && c.startLine !== c.line
        ? `lines ${c.startLine}-${c.line}`
        : `line ${c.line}`
      : 'an outdated line';
    const hunk = c.diffHunk.replace(/```/g, "'''");
    const entry = `Comment by ${c.author} on ${c.path}, ${line}:\n\`\`\`diff\n${hunk}\n\`\`\`\n${clampText(body, CONTEXT_LIMITS.commentChars, 'comment')}`;
    if (b.used + entry.length > CONTEXT_LIMITS.feedbackChars) {
      b.omitted++;
      continue;
    }
    b.used += entry.length;
    b.parts.push(entry);
  }
}

/**
 * All sections for one job. The discussion needs the API; if GitHub fails there, the run goes on
 * without it (logged) rather than failing a job over context.
 */
export async function buildTaskContext(o: {
  data: JobData;
  repoDir: string;
  config: RepoConfig;
  octokit: PermissionOctokit;
  log: Logger;
  /** What the kind of round adds after the shared sections (a writer's feedback on a pull request). */
  additions?: TaskSection[];
}): Promise<TaskSection[]> {
  const { data } = o;
  let discussion: TaskSection[] = [];
  try {
    const d = await readDiscussion(o.octokit, {
      owner: data.owner,
      repo: data.repo,
      issueNumber: data.issueNumber,
      exceptCommentIds: data.commentId ? [data.commentId] : [],
    });
    discussion = discussionSection(d);
  } catch (err) {
    o.log.warn({ err }, 'could not read the issue discussion; continuing without it');
  }
  return [
    ...guidanceSection(data),
    ...discussion,
    ...(await instructionsSections(o.repoDir, o.config)),
    ...(o.additions ?? []),
  ];
}
