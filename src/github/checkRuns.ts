import { z } from 'zod';
import { APPROVAL_CHECK_NAME } from './checks.js';
import { VERIFICATION_CHECK_NAME } from './verification.js';

/**
 * The checks on a commit as CI left them: check runs (GitHub Actions jobs and other apps) and commit statuses
 * (third-party CI). The bot's own checks never count: approval waits for a human, verification has its repair round.
 */
export interface ChecksOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

/** A failing check as the job carries it (src/queue/ciFix.ts FailingCheck). */
export interface CheckFailure {
  kind: 'check' | 'status';
  name: string;
  id?: number;
  app?: string;
  conclusion: string;
  description?: string;
  url?: string;
}

export type CommitChecks =
  { state: 'pending'; waitingFor: string[] } | { state: 'done'; failing: CheckFailure[]; passed: number };

const CheckRun = z.object({
  id: z.number().int().positive(),
  name: z.string(),
  status: z.string(),
  conclusion: z.string().nullable().optional(),
  details_url: z.string().nullable().optional(),
  html_url: z.string().nullable().optional(),
  app: z.object({ slug: z.string().optional() }).nullable().optional(),
  output: z.object({ title: z.string().nullable().optional(), summary: z.string().nullable().optional() }).optional(),
});
type CheckRun = z.infer<typeof CheckRun>;
const CheckRunList = z.object({ total_count: z.number(), check_runs: z.array(CheckRun) });
const Status = z.object({
  context: z.string(),
  state: z.string(),
  description: z.string().nullable().optional(),
  target_url: z.string().nullable().optional(),
});
const CombinedStatus = z.object({ statuses: z.array(Status) });

/** Conclusions that mean the check found something wrong (`cancelled`, `skipped`, `neutral` do not). */
const FAILING = new Set(['failure', 'timed_out', 'startup_failure']);
const PAGE = 100;
/** A commit with more check runs than this is read in part (GitHub caps a suite at 1,000 anyway). */
const MAX_PAGES = 10;

/** Every check run on `sha` (latest per name), the approval check left out. */
export async function listCheckRuns(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; sha: string },
): Promise<CheckRun[]> {
  const runs: CheckRun[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
      owner: o.owner,
      repo: o.repo,
      ref: o.sha,
      filter: 'latest',
      per_page: PAGE,
      page,
    });
    const list = CheckRunList.parse(data);
    runs.push(...list.check_runs);
    if (list.check_runs.length < PAGE || runs.length >= list.total_count) break;
  }
  // The bot's own checks are not CI: the approval waits for a human, the verification verdict has its repair round.
  return runs.filter((r) => r.name !== APPROVAL_CHECK_NAME && r.name !== VERIFICATION_CHECK_NAME);
}

/** The commit statuses on `sha`, latest per context (GitHub's combined status). */
export async function listStatuses(octokit: ChecksOctokit, o: { owner: string; repo: string; sha: string }) {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/commits/{ref}/status', {
    owner: o.owner,
    repo: o.repo,
    ref: o.sha,
    per_page: PAGE,
  });
  return CombinedStatus.parse(data).statuses;
}

/** Whether CI on `sha` has finished, and what failed. */
export async function readCommitChecks(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; sha: string },
): Promise<CommitChecks> {
  const [runs, statuses] = await Promise.all([listCheckRuns(octokit, o), listStatuses(octokit, o)]);
  const waitingFor = [
    ...runs.filter((r) => r.status !== 'completed').map((r) => r.name),
    ...statuses.filter((s) => s.state === 'pending').map((s) => s.context),
  ];
  if (waitingFor.length > 0) return { state: 'pending', waitingFor };
  const failing: CheckFailure[] = [
    ...runs.filter((r) => FAILING.has(r.conclusion ?? '')).map(checkRunFailure),
    ...statuses
      .filter((s) => s.state === 'failure' || s.state === 'error')
      .map((s) => ({
        kind: 'status' as const,
        name: s.context,
        conclusion: s.state,
        ...(s.description ? { description: s.description.slice(0, 1000) } : {}),
        ...(s.target_url ? { url: s.target_url.slice(0, 2000) } : {}),
      })),
  ];
  return { state: 'done', failing, passed: runs.length + statuses.length - failing.length };
}

function checkRunFailure(r: CheckRun): CheckFailure {
  const url = r.html_url ?? r.details_url;
  return {
    kind: 'check',
    name: r.name.slice(0, 300),
    id: r.id,
    ...(r.app?.slug ? { app: r.app.slug } : {}),
    conclusion: r.conclusion ?? 'failure',
    ...(url ? { url: url.slice(0, 2000) } : {}),
  };
}

/** Names of the checks in `failing` that fail on `sha` too (the pull request's base): failures that predate it. */
export async function failingAlsoOn(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; sha: string },
  failing: CheckFailure[],
): Promise<Set<string>> {
  const base = await readCommitChecks(octokit, o);
  const names = new Set(base.state === 'done' ? base.failing.map((f) => f.name) : []);
  return new Set(failing.filter((f) => names.has(f.name)).map((f) => f.name));
}

/** One check run's output: title, summary. */
export async function getCheckRun(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; id: number },
): Promise<CheckRun> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}', {
    owner: o.owner,
    repo: o.repo,
    check_run_id: o.id,
  });
  return CheckRun.parse(data);
}

const Annotation = z.object({
  path: z.string(),
  start_line: z.number().int().nullable().optional(),
  end_line: z.number().int().nullable().optional(),
  annotation_level: z.string().nullable().optional(),
  title: z.string().nullable().optional(),
  message: z.string().nullable().optional(),
});

/** A check run's annotations as `path:line: level: message` lines (the first `max`). */
export async function listAnnotations(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; id: number; max: number },
): Promise<string[]> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations', {
    owner: o.owner,
    repo: o.repo,
    check_run_id: o.id,
    per_page: Math.min(o.max, 50),
  });
  return z
    .array(Annotation)
    .parse(data)
    .slice(0, o.max)
    .map((a) => {
      const where = a.start_line ? `${a.path}:${a.start_line}` : a.path;
      const text = [a.title, a.message].filter(Boolean).join(': ');
      return `${where}: ${a.annotation_level ?? 'notice'}: ${text}`;
    });
}

const ActionsJob = z.object({
  steps: z.array(z.object({ name: z.string(), conclusion: z.string().nullable().optional() })).optional(),
});

/** Names of a GitHub Actions job's failed steps. */
export async function failedSteps(
  octokit: ChecksOctokit,
  o: { owner: string; repo: string; jobId: number },
): Promise<string[]> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/actions/jobs/{job_id}', {
    owner: o.owner,
    repo: o.repo,
    job_id: o.jobId,
  });
  return (ActionsJob.parse(data).steps ?? []).filter((s) => FAILING.has(s.conclusion ?? '')).map((s) => s.name);
}
