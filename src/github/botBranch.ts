import { BOT_BRANCH_PREFIX } from './git.js';

/**
 * Reads back what branchNameFor wrote: `frognano/issue-12` -> issue 12, attempt 1; `...-attempt-3` -> 3.
 * Partial-work branches and anything else return null: only a PR from one of these is the bot's draft.
 */
export function parseBotBranch(ref: string): { issueNumber: number; attempt: number } | null {
  if (!ref.startsWith(BOT_BRANCH_PREFIX)) return null;
  const m = /^issue-([1-9]\d{0,9})(?:-attempt-([2-9]|[1-9]\d{1,3}))?$/.exec(ref.slice(BOT_BRANCH_PREFIX.length));
  if (!m) return null;
  return { issueNumber: Number(m[1]), attempt: m[2] ? Number(m[2]) : 1 };
}
