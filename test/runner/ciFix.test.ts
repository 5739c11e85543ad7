import { promises as fs } from 'node:fs';
import nock from 'nock';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import type { CiFix } from '../../src/queue/ciFix.js';
import type { JobData } from '../../src/queue/schema.js';
import { jobData } from './fixtures.js';
import { useRunnerRounds } from './rounds.js';
import { API } from './githubRecorder.js';

const REPO = 'greeter';
const BRANCH = 'frognano/issue-7';
const FIX: ReplayTurn[] = [
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hello, world\n' } }] },
  { content: 'Made the greeting match what the test expects.', tool_calls: [] },
];

/** The runner's side of a CI-fix round when GitHub's answers are bad: no log, no Actions access, many failing jobs. */
describe('CI-fix round on the bot pull request (runner, bad input)', () => {
  const rounds = useRunnerRounds(REPO);

  async function setup(ids: number[], logStatus: number, turns: ReplayTurn[] = FIX) {
    await rounds.setup({
      owner: 'ci',
      files: { 'hello.txt': 'hi\n' },
      branches: { [BRANCH]: { 'hello.txt': 'hello\n' } },
      backend: ReplayBackend.fromTurns(turns),
      pullRequest: { head: BRANCH },
      routes: (owner) => failingJobs(owner, ids, logStatus),
    });
  }

  function failingJobs(owner: string, ids: number[], logStatus: number) {
    const r = `/repos/${owner}/${REPO}`;
    const scope = nock(API).persist();
    for (const id of ids) {
      scope
        .get(`${r}/check-runs/${id}`)
        .reply(200, {
          id,
          name: `job-${id}`,
          status: 'completed',
          conclusion: 'failure',
          output: { title: `job ${id} failed`, summary: 'tests failed' },
        })
        .get(`${r}/check-runs/${id}/annotations`)
        .query(true)
        .reply(200, [
          { path: 'hello.txt', start_line: 1, annotation_level: 'failure', message: `expected "hello, world" (${id})` },
        ])
        .get(`${r}/actions/jobs/${id}`)
        .reply(
          logStatus === 403 ? 403 : 200,
          logStatus === 403
            ? { message: 'Resource not accessible by integration' }
            : { steps: [{ name: 'Run tests', conclusion: 'failure' }] },
        )
        .get(`${r}/actions/jobs/${id}/logs`)
        .reply(logStatus, { message: logStatus === 403 ? 'Resource not accessible by integration' : 'Not Found' });
    }
  }

  const head = () => rounds.head(BRANCH);
  const run = (ids: number[], round = 1) => {
    const ciFix: CiFix = {
      headSha: head(),
      checks: ids.map((id) => ({ kind: 'check', name: `job-${id}`, id, app: 'github-actions', conclusion: 'failure' })),
      omitted: 0,
      streak: 1,
    };
    const followUp = {
      pullNumber: 5,
      headBranch: BRANCH,
      headSha: head(),
      baseBranch: 'main',
      round,
      feedback: '',
      inlineComments: [],
      omittedComments: 0,
      source: 'ci' as const,
    };
    const data: JobData = jobData(rounds.owner, REPO, {
      trigger: 'ci',
      triggeredBy: { login: 'frognano[bot]', id: 0 },
      followUp,
      ciFix,
    });
    return rounds.process(data);
  };
  const ciSection = async (trajectoryPath: string) => {
    const t = JSON.parse(await fs.readFile(trajectoryPath, 'utf8'));
    return (t.frognano.task.context as { kind?: string; text: string }[]).find((s) => s.kind === 'ci')!.text;
  };

  it('a log that is gone (404): the round runs with the checks and annotations only, and says so', async () => {
    await setup([11], 404);
    const result = await run([11]);
    expect(result).toMatchObject({ outcome: 'pull_request', pullRequestNumber: 5 });
    const ci = await ciSection(result.trajectoryPath!);
    expect(ci).toContain('Title: job 11 failed');
    expect(ci).toContain('hello.txt:1: failure: expected "hello, world" (11)');
    expect(ci).toContain('Failed steps: Run tests');
    expect(ci).toContain('(No log: the job log is no longer available (404).)');
    expect(rounds.gh.find('POST', '/check-runs')[0]!.body).toMatchObject({ external_id: 'issue-7' });
  });

  it('the Actions API refusing (403): one clear line in the runner log and on the PR, the round still runs, once', async () => {
    const again: ReplayTurn[] = [
      {
        content: '',
        tool_calls: [{ name: 'Write', arguments: { file_path: 'hello.txt', content: 'hello, world!\n' } }],
      },
      { content: 'Added the exclamation mark.', tool_calls: [] },
    ];
    await setup([12], 403, [...FIX, ...again]);
    const first = await run([12]);
    expect(first).toMatchObject({ outcome: 'pull_request' });
    const ci = await ciSection(first.trajectoryPath!);
    expect(ci).toContain('hello.txt:1: failure: expected "hello, world" (12)');
    expect(ci).toContain('The job logs could not be read (GitHub refused to give the job log (403)');
    const refusedLines = rounds.logs.lines.filter((l) => l.includes('GitHub refused the Actions API'));
    expect(refusedLines).toHaveLength(1);
    const notes = () =>
      rounds.gh.find('POST', '/issues/5/comments').filter((c) => String(c.body.body).includes('actions: read'));
    expect(notes()).toHaveLength(1);
    // A later round is refused the same way: it runs, and the PR is not told again.
    expect(await run([12], 2)).toMatchObject({ outcome: 'pull_request' });
    expect(rounds.logs.lines.filter((l) => l.includes('GitHub refused the Actions API'))).toHaveLength(2);
    expect(notes()).toHaveLength(1);
  });

  it('50 failing jobs: the first few in full, the rest by name', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => 100 + i);
    await setup(ids, 404);
    const result = await run(ids);
    const ci = await ciSection(result.trajectoryPath!);
    expect(ci.match(/^### Check /gm)).toHaveLength(5);
    expect(ci).toContain('Also failing (not shown in full):\n- job-105 (failure)');
    expect(ci).toContain('- job-149 (failure)');
    expect(ci).not.toContain('(110)');
    expect(ci.length).toBeLessThan(64_000);
  });
});
