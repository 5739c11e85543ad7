import type { Logger } from 'pino';
import { failedSteps, getCheckRun, listAnnotations, type ChecksOctokit } from '../github/checkRuns.js';
import { fetchJobLog, type JobLog } from '../github/ciLogs.js';
import { visibleText } from '../github/untrusted.js';
import { codeFence } from '../leaf/text.js';
import type { TaskSection } from '../leaf/trajectory.js';
import type { CiFix, FailingCheck } from '../queue/ciFix.js';
import { clampText, type FollowUp } from '../queue/schema.js';
import { errorText } from '../util/errors.js';

/**
 * What the model reads about failing CI: for each failing check its name, conclusion, output title and summary,
 * annotations, and for a GitHub Actions job its failed steps, earlier `##[error]` lines and the tail of its log.
 * The first few checks in full, the rest by name; everything is capped, and all of it is untrusted input.
 */
export const CI_LIMITS = { fullChecks: 5, annotations: 20, summaryChars: 2_000, totalChars: 60_000 };

export const ACTIONS_APP = 'github-actions';

export interface CiReport {
  section: TaskSection;
  /** Set when GitHub refused the Actions API (no `actions: read`): one line for the log and the pull request. */
  refused?: string;
}

interface Reader {
  octokit: ChecksOctokit;
  /** A client allowed to read Actions logs (`actions: read`), or null when it could not be had. */
  actions: ChecksOctokit | null;
  owner: string;
  repo: string;
  signal?: AbortSignal;
  log: Logger;
}

const visible = (text: string | null | undefined) => visibleText(text ?? '').trim();

/** Reads the failing checks' details from GitHub and renders them into the task's `ci` section. */
export async function readCiReport(
  r: Reader,
  f: Pick<FollowUp, 'round' | 'pullNumber' | 'headBranch'>,
  ci: CiFix,
): Promise<CiReport> {
  const parts = [intro(f, ci)];
  let refused: string | undefined = r.actions
    ? undefined
    : 'the installation token for GitHub Actions could not be had';
  let used = parts[0]!.length;
  const byName: string[] = [];
  for (const [i, check] of ci.checks.entries()) {
    if (i >= CI_LIMITS.fullChecks || used >= CI_LIMITS.totalChars) {
      byName.push(`- ${check.name} (${check.conclusion})`);
      continue;
    }
    const detail = await describeCheck(r, check, refused !== undefined);
    if (detail.refused) refused ??= detail.refused;
    const text = clampText(detail.text, CI_LIMITS.totalChars - used, 'check report');
    used += text.length;
    parts.push(text);
  }
  if (byName.length > 0 || ci.omitted > 0) {
    const more = ci.omitted > 0 ? `\n(and ${ci.omitted} more failing checks)` : '';
    parts.push(`Also failing (not shown in full):\n${byName.join('\n')}${more}`);
  }
  if (refused)
    parts.push(`The job logs could not be read (${refused}); the checks' output and annotations are all there is.`);
  return {
    section: { kind: 'ci', heading: 'Failing checks on your pull request', text: parts.join('\n\n') },
    ...(refused ? { refused } : {}),
  };
}

function intro(f: Pick<FollowUp, 'round' | 'pullNumber' | 'headBranch'>, ci: CiFix): string {
  return (
    `This is round ${f.round} on pull request #${f.pullNumber}: CI failed on its head commit ${ci.headSha.slice(0, 12)}. ` +
    `The repository already contains your earlier changes (branch ${f.headBranch}). Make the failing checks below pass ` +
    'with new changes on top of them. Fix the cause; do not delete, skip or weaken tests or checks.'
  );
}

async function describeCheck(
  r: Reader,
  check: FailingCheck,
  skipLogs: boolean,
): Promise<{ text: string; refused?: string }> {
  const lines = [
    `### ${check.kind === 'status' ? 'Status' : 'Check'} \`${check.name.replace(/`/g, "'")}\`: ${check.conclusion}`,
  ];
  if (check.kind === 'status' || !check.id) {
    const d = visible(check.description);
    if (d) lines.push(d);
    return { text: lines.join('\n') };
  }
  const id = check.id;
  await tryRead(r, `check run ${id}`, async () => {
    const run = await getCheckRun(r.octokit, { owner: r.owner, repo: r.repo, id });
    const title = visible(run.output?.title);
    const summary = visible(run.output?.summary);
    if (title) lines.push(`Title: ${title}`);
    if (summary) lines.push(`Summary:\n${clampText(summary, CI_LIMITS.summaryChars, 'summary')}`);
  });
  await tryRead(r, `annotations of ${id}`, async () => {
    const notes = await listAnnotations(r.octokit, { owner: r.owner, repo: r.repo, id, max: CI_LIMITS.annotations });
    const shown = notes.map((n) => visible(n)).filter(Boolean);
    if (shown.length > 0) lines.push(`Annotations:\n${shown.join('\n')}`);
  });
  if (check.app !== ACTIONS_APP) return { text: lines.join('\n') };
  if (skipLogs || !r.actions) return { text: lines.join('\n') };
  const refused = await describeJob(r, r.actions, id, lines);
  return { text: lines.join('\n'), ...(refused ? { refused } : {}) };
}

/** The failed steps and the log tail of an Actions job (its id is the check run's); the refusal, if GitHub refused. */
async function describeJob(
  r: Reader,
  actions: ChecksOctokit,
  jobId: number,
  lines: string[],
): Promise<string | undefined> {
  await tryRead(r, `steps of job ${jobId}`, async () => {
    const steps = await failedSteps(actions, { owner: r.owner, repo: r.repo, jobId });
    if (steps.length > 0) lines.push(`Failed steps: ${steps.map((s) => visible(s)).join(', ')}`);
  });
  let log: JobLog | null = null;
  await tryRead(r, `log of job ${jobId}`, async () => {
    log = await fetchJobLog(actions, { owner: r.owner, repo: r.repo, jobId, signal: r.signal });
  });
  const got = log as JobLog | null;
  if (!got) {
    lines.push('(The job log could not be read.)');
    return undefined;
  }
  if (got.kind === 'refused') return got.why;
  if (got.kind === 'gone') {
    lines.push(`(No log: ${got.why}.)`);
    return undefined;
  }
  if (got.errors.length > 0)
    lines.push(`Error lines from earlier in the log:\n${codeFence(got.errors.join('\n'), 'text')}`);
  const cut = got.droppedLines > 0 ? ` (${got.droppedLines} earlier lines left out)` : '';
  lines.push(`The end of the job's log${cut}:\n${codeFence(got.lines.join('\n'), 'text')}`);
  return undefined;
}

/** A read that fails leaves its part out (logged); the round goes on with what it has. */
async function tryRead(r: Reader, what: string, read: () => Promise<void>): Promise<void> {
  try {
    await read();
  } catch (err) {
    if (r.signal?.aborted) throw err;
    r.log.warn({ err: errorText(err) }, `ci-fix: could not read the ${what}`);
  }
}
