import type { Logger } from 'pino';
import { withCoAuthor } from '../github/coAuthor.js';
import {
  applyPatch,
  BOT_BRANCH_PREFIX,
  commitStaged,
  DEFAULT_BOT_IDENTITY,
  pushBranch,
  stagedNumstat,
  type GitAuth,
  type Identity,
} from '../github/git.js';
import { checkGuardrails } from '../github/pullRequest.js';
import type { RepoConfig } from '../github/repoConfig.js';
import type { JobData } from '../queue/schema.js';
import { redact } from '../util/redact.js';

/** `frognano/issue-12-partial`, `frognano/issue-12-attempt-3-partial`: never a branch a PR is opened from. */
export function partialBranchName(issueNumber: number, attempt: number): string {
  return `${BOT_BRANCH_PREFIX}issue-${issueNumber}${attempt > 1 ? `-attempt-${attempt}` : ''}-partial`;
}

/**
 * `publishFailedAttempts: true`: a run that changed files but ended at a limit or with an error leaves its
 * work on a branch (no pull request) so nothing is lost. The guardrails still apply. Returns a sentence for
 * the status comment, or null when nothing was pushed (no change, refused, or the push failed: logged).
 */
export async function publishPartialWork(o: {
  data: JobData;
  cloneDir: string;
  patch: string;
  config: RepoConfig;
  auth: GitAuth;
  identity?: Identity;
  what: string;
  gitTimeoutMs?: number;
  log: Logger;
}): Promise<string | null> {
  if (!o.config.publishFailedAttempts || !o.patch.trim()) return null;
  const branch = partialBranchName(o.data.issueNumber, o.data.attempt);
  try {
    await applyPatch(o.cloneDir, o.patch, { timeoutMs: o.gitTimeoutMs });
    const files = await stagedNumstat(o.cloneDir);
    if (files.length === 0) return null;
    const verdict = checkGuardrails(files, o.config);
    if (!verdict.ok) return `The unfinished work was not pushed: ${verdict.reason}.`;
    const message = withCoAuthor(
      `frognano: unfinished attempt on #${o.data.issueNumber}\n\nRefs #${o.data.issueNumber}. The run stopped before the model was done (${o.what}); ` +
        'this is partial work by the FrogNano-4B model, kept because the repository sets publishFailedAttempts.\n',
      o.data.triggeredBy,
    );
    await commitStaged(o.cloneDir, { branch, message, identity: o.identity ?? DEFAULT_BOT_IDENTITY });
    // The same attempt always writes the same branch: a job run again replaces its own earlier push.
    await pushBranch(o.cloneDir, {
      owner: o.data.owner,
      repo: o.data.repo,
      branch,
      auth: o.auth,
      force: true,
      timeoutMs: o.gitTimeoutMs,
    });
    o.log.info({ branch, files: files.length }, 'unfinished work pushed');
    const link = /^https:\/\//.test(o.auth.baseUrl)
      ? ` (${o.auth.baseUrl.replace(/\/+$/, '')}/${o.data.owner}/${o.data.repo}/tree/${branch})`
      : '';
    return `The unfinished work (${files.length} file${files.length === 1 ? '' : 's'}) is on branch \`${branch}\`${link}, without a pull request.`;
  } catch (err) {
    o.log.warn({ err: redact(String(err)) }, 'could not push the unfinished work');
    return null;
  }
}
