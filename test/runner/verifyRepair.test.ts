/**
 * Verification-repair rounds (verify.onFailure: repair): the round the runner queues when the verdict on a published
 * change failed, and what that round does, on real bwrap, real git, real Redis and BullMQ; GitHub's REST API by nock.
 */
import { promises as fs } from 'node:fs';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { createQueue } from '../../src/queue/queue.js';
import { JobDataSchema, jobIdFor, type JobData } from '../../src/queue/schema.js';
import type { RepairRequest } from '../../src/queue/verifyRepair.js';
import { processJob } from '../../src/runner/processJob.js';
import { repairRequestData, startRepairRound } from '../../src/runner/verifyRepair.js';
import { gitIn } from '../github/gitRepo.js';
import { jobData } from './fixtures.js';
import { useRunnerRounds } from './rounds.js';
import { CALC, TESTS } from '../support/calcRepo.js';
import { parseQuotasFile } from '../../src/app/quotaFile.js';
import { currentAttempt } from '../../src/queue/attempts.js';
import { tenantOf } from '../../src/queue/fairShare/tenants.js';
import { heldSeconds } from '../../src/queue/quotas/holds.js';
import { publishQuotas } from '../../src/queue/quotas/published.js';
import { recordRunnerSeconds } from '../../src/queue/quotas/store.js';

const REPO = 'calc';
const BRANCH = 'frognano/issue-7';
const config = (verify = '') => `testCommands: ["python3 -m unittest -v"]\n${verify ? `verify:\n${verify}` : ''}`;
const REPORT = 'The bot verified your change: 1 test still failing.\n\nStill failing:\n- test_calc.TestCalc.test_add';

const FIX_ADD: ReplayTurn[] = [
  {
    content: '',
    tool_calls: [
      {
        name: 'Edit',
        arguments: {
          file_path: 'calc.py',
          old_string: 'add(a, b):\n    return a - b',
          new_string: 'add(a, b):\n    return a + b',
        },
      },
    ],
  },
  { content: 'add() adds now.', tool_calls: [] },
];
const NOTES_ONLY: ReplayTurn[] = [
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'NOTES.md', content: 'looked at it\n' } }] },
  { content: 'Wrote notes.', tool_calls: [] },
];

describe('verification-repair rounds', () => {
  const rounds = useRunnerRounds(REPO);

  async function setup(turns: ReplayTurn[], yml: string) {
    const files = { 'calc.py': CALC, 'test_calc.py': TESTS, '.github/frognano.yml': yml };
    await rounds.setup({
      owner: 'vr',
      files,
      branches: { [BRANCH]: { ...files, 'NOTES.md': 'first round\n' } },
      backend: ReplayBackend.fromTurns(turns),
      verify: true,
      pullRequest: { head: BRANCH },
    });
  }

  const head = () => rounds.head(BRANCH);
  const repairOf = (streak: number): RepairRequest => ({
    pullNumber: 5,
    headBranch: BRANCH,
    baseBranch: 'main',
    headSha: head(),
    streak,
    report: REPORT,
  });
  /** A first attempt's result that published the change and asks for a repair round. */
  const publishedWithRepair = () => ({
    outcome: 'pull_request' as const,
    exitReason: 'agent',
    turns: 2,
    elapsedSeconds: 1,
    repair: repairOf(1),
  });
  const runRepair = (streak: number) => {
    const req = repairRequestData(jobData(rounds.owner, REPO), repairOf(streak));
    const job: JobData = JobDataSchema.parse({ ...req, followUp: { ...req.followUp, round: 2 } });
    return processJob(
      { id: jobIdFor(job), data: job, updateProgress: async () => undefined },
      rounds.ctx,
      new AbortController().signal,
    );
  };

  it('a first attempt whose verdict fails asks for a repair round with the measured report', async () => {
    await setup(NOTES_ONLY, config());
    const result = await processJob(
      { id: `${rounds.owner}/${REPO}#7@1`, data: jobData(rounds.owner, REPO), updateProgress: async () => undefined },
      rounds.ctx,
      new AbortController().signal,
    );
    expect(result).toMatchObject({
      outcome: 'pull_request',
      repair: { pullNumber: 5, headBranch: BRANCH, baseBranch: 'main', streak: 1 },
    });
    expect(result.repair!.headSha).toMatch(/^[0-9a-f]{40}$/);
    expect(result.repair!.report).toContain('Still failing');
    expect(result.repair!.report).toContain('test_add');
    expect(result.repair!.report).toContain('python3 -m unittest -v');
  }, 180_000);

  it('verify.onFailure: report publishes the verdict and asks for nothing', async () => {
    await setup(NOTES_ONLY, config('  onFailure: report\n'));
    const result = await processJob(
      { id: `${rounds.owner}/${REPO}#7@1`, data: jobData(rounds.owner, REPO), updateProgress: async () => undefined },
      rounds.ctx,
      new AbortController().signal,
    );
    expect(result.outcome).toBe('pull_request');
    expect(result.repair).toBeUndefined();
  }, 180_000);

  it('the repair round gets the report as its task, credits nobody, and a fix that passes asks for no more', async () => {
    await setup(FIX_ADD, config());
    const result = await runRepair(1);
    expect(result.reason).toBeUndefined();
    expect(result).toMatchObject({ outcome: 'pull_request', pullRequestNumber: 5 });
    expect(result.repair).toBeUndefined();
    const t = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
    const sections = t.frognano.task.context as { heading: string; text: string }[];
    expect(sections.find((s) => s.heading === 'Failing verification of your change')?.text).toBe(REPORT);
    const message = gitIn(rounds.remote.bare, 'log', '-1', '--format=%B', `refs/heads/${BRANCH}`);
    expect(message).toContain('address failing verification on #5');
    expect(message).not.toContain('Co-authored-by');
    expect(rounds.gh.find('POST', '/requested_reviewers')).toEqual([]);
  }, 180_000);

  it('a repair round that still fails at verify.maxRepairRounds labels the PR needs-human, once, and stops', async () => {
    await setup(NOTES_ONLY, config());
    const result = await runRepair(1);
    expect(result.outcome).toBe('pull_request');
    expect(result.repair).toBeUndefined();
    const labels = rounds.gh.find('POST', '/issues/5/labels').map((c) => c.body);
    expect(labels).toContainEqual({ labels: ['frognano:needs-human'] });
    const comments = rounds.gh.find('POST', '/issues/5/comments').map((c) => String(c.body.body));
    expect(comments.some((c) => c.includes('verify.maxRepairRounds') && c.includes('frognano:needs-human'))).toBe(true);
  }, 180_000);

  it('startRepairRound queues the repair as the pull request round, after the asks', async () => {
    await setup(NOTES_ONLY, config());
    const queue = createQueue(rounds.redis, { prefix: `fn-vr-${randomUUID().slice(0, 8)}` });
    try {
      const data = jobData(rounds.owner, REPO);
      const result = publishedWithRepair();
      await startRepairRound(queue, rounds.ctx, data, result, pino({ level: 'silent' }));
      const job = await queue.getJob(jobIdFor({ owner: rounds.owner, repo: REPO, issueNumber: 5, attempt: 1 }));
      expect(job?.data).toMatchObject({
        trigger: 'verify',
        triggeredBy: { login: 'frognano' },
        followUp: { pullNumber: 5, source: 'verify', round: 1, headBranch: BRANCH },
        verifyRepair: { streak: 1, report: REPORT },
      });
      // No repair without a request, and never a second one while the first is queued.
      await startRepairRound(queue, rounds.ctx, data, { ...result, repair: undefined }, pino({ level: 'silent' }));
      await startRepairRound(queue, rounds.ctx, data, result, pino({ level: 'silent' }));
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 1 });
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  }, 60_000);

  it('a repair round over quota is not queued: the pull request keeps its verdict and is told why, once', async () => {
    await setup(NOTES_ONLY, config());
    const queue = createQueue(rounds.redis, { prefix: `fn-vr-${randomUUID().slice(0, 8)}` });
    const tenant = tenantOf({ owner: rounds.owner, repo: REPO });
    // The app stores the quotas for the runners; this repository has used its day.
    await publishQuotas(
      rounds.redis,
      parseQuotasFile(`repositories:\n  ${rounds.owner}/${REPO}: { runnerSecondsPerDay: 3600 }\n`, 'q'),
    );
    await recordRunnerSeconds(rounds.redis, tenant, 3600);
    try {
      const data = jobData(rounds.owner, REPO);
      const result = publishedWithRepair();
      await startRepairRound(queue, rounds.ctx, data, result, pino({ level: 'silent' }));
      await startRepairRound(queue, rounds.ctx, data, result, pino({ level: 'silent' })); // a second verdict: no second comment
      expect(await queue.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 0 });
      const comments = rounds.gh.find('POST', '/issues/5/comments').map((c) => String(c.body.body));
      expect(comments).toHaveLength(1);
      expect(comments[0]).toMatch(
        new RegExp(
          "^The verification of this pull request's head failed, but no repair round was queued \\(its verdict stands\\): " +
            `the repository \`${rounds.owner.toLowerCase()}/calc\` has used its quota of runner time per day ` +
            '\\(`runnerSecondsPerDay`: 60 min used of 60 min\\)\\. It resets at \\d{4}-\\d\\d-\\d\\d 00:00 UTC; ask again after that\\.',
        ),
      );
      // Nothing was held or counted for the refused round; the pull request's round number was not spent.
      expect((await heldSeconds(rounds.redis, tenant)).jobs).toEqual([]);
      expect(await currentAttempt(rounds.redis, { owner: rounds.owner, repo: REPO, issueNumber: 5 })).toBeNull();
    } finally {
      await publishQuotas(rounds.redis, null);
      await queue.obliterate({ force: true });
      await queue.close();
    }
  }, 60_000);
});
