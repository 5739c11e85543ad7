import { z } from 'zod';
import { NEEDS_HUMAN_LABEL } from './followUpPullRequest.js';
import { PullRequestSlice } from './pullRequestFetch.js';
import {
  parseRepoConfig,
  REPO_CONFIG_PATH,
  RepoConfigError,
  defaultRepoConfig,
  type RepoConfig,
} from './repoConfig.js';

/** REST reads and writes the app makes when CI finishes on the bot's pull request (src/app/ciFix.ts). */
export interface CiOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

/** The pull request with its base commit (whether a failure predates the PR is read there). */
export const CiPullRequest = PullRequestSlice.extend({
  base: z.object({ ref: z.string(), sha: z.string(), repo: z.object({ full_name: z.string() }) }),
});
export type CiPullRequest = z.infer<typeof CiPullRequest>;

function status(e: unknown): number | undefined {
  return typeof e === 'object' && e !== null && 'status' in e ? Number((e as { status: unknown }).status) : undefined;
}

/** Open pull requests whose head is `branch` in this repository and whose head commit is `sha`. */
export async function openPullRequestsAt(
  octokit: CiOctokit,
  o: { owner: string; repo: string; branch: string; sha: string },
) {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls', {
    owner: o.owner,
    repo: o.repo,
    head: `${o.owner}:${o.branch}`,
    state: 'open',
    per_page: 10,
  });
  return z
    .array(z.unknown())
    .parse(data)
    .map((p) => CiPullRequest.safeParse(p))
    .flatMap((r) => (r.success ? [r.data] : []))
    .filter((p) => p.head.ref === o.branch && p.head.sha === o.sha);
}

const CommitIdentity = z.object({
  commit: z.object({
    author: z.object({ name: z.string() }).nullable(),
    committer: z.object({ name: z.string() }).nullable(),
  }),
});

/** Whether the commit was written and committed by a bot account (the bot's commits carry its `name[bot]` identity). */
export async function committedByBot(
  octokit: CiOctokit,
  o: { owner: string; repo: string; sha: string },
): Promise<boolean> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}', {
    owner: o.owner,
    repo: o.repo,
    ref: o.sha,
  });
  const c = CommitIdentity.parse(data).commit;
  return !!c.author?.name.endsWith('[bot]') && !!c.committer?.name.endsWith('[bot]');
}

/**
 * `.github/frognano.yml` on `ref` through the contents API (the app has no clone): the defaults when there is none,
 * null when it does not parse (the runner reports a bad config; the app starts nothing on it).
 */
export async function readRepoConfigAt(
  octokit: CiOctokit,
  o: { owner: string; repo: string; ref: string },
): Promise<RepoConfig | null> {
  let data: unknown;
  try {
    ({ data } = await octokit.request('GET /repos/{owner}/{repo}/contents/{path}', {
      owner: o.owner,
      repo: o.repo,
      path: REPO_CONFIG_PATH,
      ref: o.ref,
    }));
  } catch (e) {
    if (status(e) === 404) return defaultRepoConfig();
    throw e;
  }
  const file = z.object({ content: z.string(), encoding: z.literal('base64') }).safeParse(data);
  if (!file.success) return null;
  try {
    return parseRepoConfig(Buffer.from(file.data.content, 'base64').toString('utf8'));
  } catch (e) {
    if (e instanceof RepoConfigError) return null;
    throw e;
  }
}

/** Labels the pull request `frognano:needs-human` (creating the label when the repository lacks it). */
export async function labelNeedsHumanVia(
  octokit: CiOctokit,
  o: { owner: string; repo: string; pullNumber: number },
): Promise<void> {
  try {
    await octokit.request('POST /repos/{owner}/{repo}/labels', {
      owner: o.owner,
      repo: o.repo,
      name: NEEDS_HUMAN_LABEL,
      color: 'd93f0b',
      description: 'FrogNano reached its round limit; a person needs to finish this',
    });
  } catch (e) {
    if (status(e) !== 422) throw e;
  }
  await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', {
    owner: o.owner,
    repo: o.repo,
    issue_number: o.pullNumber,
    labels: [NEEDS_HUMAN_LABEL],
  });
}

/** The CI-fix rows of the run history in a PR description (what the automatic rounds did), last `max`. */
export function ciHistoryRows(body: string | null | undefined, max: number): string[] {
  return (body ?? '')
    .split('\n')
    .filter((l) => l.startsWith('| CI fix '))
    .slice(-max);
}
