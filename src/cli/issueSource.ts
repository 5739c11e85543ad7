import { Octokit } from '@octokit/rest';
import { visibleText } from '../github/untrusted.js';
import { clampIssueBody } from '../queue/schema.js';
import { CliError, readNamedFile, setupError } from './exitCodes.js';

export interface IssueTask {
  title: string;
  body: string;
  repo?: string;
  issueNumber?: number;
}

/** Titles longer than this are cut; GitHub's own limit is 256. */
const MAX_TITLE_CHARS = 256;

/**
 * Splits free text into a title (first non-empty line, Markdown heading marks removed) and a body (the rest),
 * the same way an issue reads: "Fix crash on empty input\n\nSteps: ..." -> title + body. Like an issue, the
 * model gets only what a reader sees (no HTML comments, no invisible characters; src/github/untrusted.ts).
 */
export function taskFromText(text: string): IssueTask {
  const lines = visibleText(text.replace(/\r\n?/g, '\n')).split('\n');
  const first = lines.findIndex((l) => l.trim() !== '');
  if (first === -1)
    throw setupError('the issue text is empty', 'describe the problem: --issue "Fix ..." or a file with a title line');
  const title = lines[first]
    .trim()
    .replace(/^#+\s*/, '')
    .slice(0, MAX_TITLE_CHARS);
  const body = lines
    .slice(first + 1)
    .join('\n')
    .trim();
  return { title, body: clampIssueBody(body) };
}

export async function taskFromFile(file: string): Promise<IssueTask> {
  const text = await readNamedFile(file, 'the issue file ', () => 'check the path given to --issue-file');
  return taskFromText(text);
}

export interface GitHubIssueRef {
  owner: string;
  repo: string;
  issueNumber: number;
}

/**
 * Title and body of a GitHub issue via the REST API. GITHUB_TOKEN is optional (public repositories);
 * GITHUB_API_URL points at GitHub Enterprise Server. The token is only sent to the API, never into the run.
 */
export async function taskFromGitHub(ref: GitHubIssueRef, env: NodeJS.ProcessEnv): Promise<IssueTask> {
  const octokit = new Octokit({
    auth: env.GITHUB_TOKEN || undefined,
    baseUrl: env.GITHUB_API_URL || undefined,
    userAgent: 'frognano-cli',
    request: { retries: 0 },
    // Failures are reported once, as a CliError with a hint; Octokit's own request log would repeat them.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  const name = `${ref.owner}/${ref.repo}#${ref.issueNumber}`;
  try {
    const { data } = await octokit.rest.issues.get({ owner: ref.owner, repo: ref.repo, issue_number: ref.issueNumber });
    if (data.pull_request) {
      throw setupError(`${name} is a pull request, not an issue`, 'pass the number of an issue');
    }
    // Issue text is anyone's text: the model gets what a reader of the issue sees, nothing hidden in it.
    return {
      title: visibleText(data.title).slice(0, MAX_TITLE_CHARS),
      body: clampIssueBody(visibleText(data.body ?? '')),
      repo: `${ref.owner}/${ref.repo}`,
      issueNumber: ref.issueNumber,
    };
  } catch (err) {
    if (err instanceof CliError) throw err;
    const status = (err as { status?: number }).status;
    const tokenHint = env.GITHUB_TOKEN
      ? 'check that GITHUB_TOKEN can read this repository'
      : 'for a private repository set GITHUB_TOKEN';
    if (status === 404)
      throw setupError(`issue ${name} not found`, `check the owner, repository and number; ${tokenHint}`);
    if (status === 401)
      throw setupError(
        `GitHub rejected GITHUB_TOKEN while fetching ${name} (401)`,
        'the token is invalid or expired; create a new one or unset it for public repositories',
      );
    if (status === 403 || status === 429) {
      throw setupError(
        `GitHub refused to serve ${name} (${status}: ${(err as Error).message})`,
        `probably a rate limit; ${env.GITHUB_TOKEN ? 'wait and retry' : 'set GITHUB_TOKEN to get a higher limit'}`,
      );
    }
    if (status === 410) throw setupError(`issue ${name} was deleted or issues are disabled in that repository (410)`);
    throw setupError(
      `could not fetch ${name}: ${(err as Error).message}`,
      'check the network connection and GITHUB_API_URL',
    );
  }
}
