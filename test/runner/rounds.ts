import { afterEach } from '@jest/globals';
import type { Redis } from 'ioredis';
import nock from 'nock';
import type { ModelBackend } from '../../src/inference/types.js';
import { jobIdFor, type FollowUp, type JobData } from '../../src/queue/schema.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { captureLogs, fakeInstallationToken, runnerContext, uniqueOwner } from './fixtures.js';
import { recordGitHub } from './githubRecorder.js';
import { recordPullRequest } from './pullRequestRecorder.js';
import { useRedisAndNock } from './redisAndNock.js';

// Loads nock (through redisAndNock.ts): only for test files that use nock, as that module says.

export interface RoundSetup {
  /** Names the test's unique owner (`uniqueOwner(owner)`). */
  owner: string;
  /** The base branch's files, and more branches (the bot's, with its draft) on top of it. */
  files: Record<string, string>;
  branches?: Record<string, Record<string, string>>;
  backend: ModelBackend;
  /** The verify step as the runner wires it. */
  verify?: boolean;
  /** The bot's pull request #5 from `head` into main as GitHub keeps it; absent: the round has none yet. */
  pullRequest?: Omit<Parameters<typeof recordPullRequest>[3], 'number' | 'base'>;
  /** GitHub routes of the test's own, registered before the recorded API's so that they win. */
  routes?: (owner: string) => void;
}

/**
 * A runner test file's rounds without the queue (processJob as the worker calls it): real Redis and nock for the
 * file; per test a bare remote under a unique owner, the runner context on it (the bwrap sandbox, the scripted
 * model), the bot's pull request and the rest of GitHub's REST API recorded; removed after each test. The fields are
 * the current test's.
 */
export interface RunnerRounds {
  redis: Redis;
  owner: string;
  remote: BareRemote;
  ctx: RunnerContext & { cleanup(): Promise<void> };
  logs: ReturnType<typeof captureLogs>;
  gh: ReturnType<typeof recordGitHub>;
  pr: ReturnType<typeof recordPullRequest>;
  setup(o: RoundSetup): Promise<void>;
  head(branch: string): string;
  process(data: JobData, ctx?: RunnerContext): ReturnType<typeof processJob>;
}

export function useRunnerRounds(repo: string): RunnerRounds {
  const r: RunnerRounds = {
    redis: undefined as unknown as Redis,
    owner: '',
    remote: undefined as unknown as BareRemote,
    ctx: undefined as unknown as RunnerContext & { cleanup(): Promise<void> },
    logs: undefined as unknown as ReturnType<typeof captureLogs>,
    gh: undefined as unknown as ReturnType<typeof recordGitHub>,
    pr: undefined as unknown as ReturnType<typeof recordPullRequest>,
    async setup(o: RoundSetup): Promise<void> {
      r.owner = uniqueOwner(o.owner);
      r.remote = await makeBareRemote(r.owner, repo, o.files, { extraBranches: o.branches });
      r.logs = captureLogs();
      r.ctx = await runnerContext({
        redis: r.redis,
        remote: r.remote,
        backend: o.backend,
        logger: r.logs.logger,
        verify: o.verify,
      });
      if (o.pullRequest)
        r.pr = recordPullRequest(r.remote, r.owner, repo, { number: 5, base: 'main', ...o.pullRequest });
      o.routes?.(r.owner);
      r.gh = recordGitHub(r.owner, repo, { token: fakeInstallationToken(), installationId: 4242 });
    },
    /** The commit `branch` points at in the remote. */
    head: (branch: string) => gitIn(r.remote.bare, 'rev-parse', `refs/heads/${branch}`).trim(),
    /** One round of job `data`, as the runner's worker runs it. */
    process: (data: JobData, ctx: RunnerContext = r.ctx) =>
      processJob(
        { id: jobIdFor(data), data, updateProgress: async () => undefined },
        ctx,
        new AbortController().signal,
      ),
  };
  useRedisAndNock((redis) => (r.redis = redis));
  afterEach(async () => {
    nock.cleanAll();
    await r.remote?.cleanup();
    await r.ctx?.cleanup();
    const owner = r.owner.toLowerCase();
    if (owner) await r.redis.del(`frognano:status:${owner}/${repo}#5`, `frognano:status:${owner}/${repo}#7`);
    Object.assign(r, { owner: '', remote: undefined, ctx: undefined });
  });
  return r;
}

/** Follow-up round 1 on the bot's pull request #5 (head `branch`, its commit read from the remote), into main. */
export function followUpOn(remote: BareRemote, branch: string, over: Partial<FollowUp> = {}): FollowUp {
  return {
    pullNumber: 5,
    headBranch: branch,
    headSha: gitIn(remote.bare, 'rev-parse', `refs/heads/${branch}`).trim(),
    baseBranch: 'main',
    round: 1,
    feedback: 'Say hello to the world.',
    inlineComments: [],
    omittedComments: 0,
    source: 'comment',
    ...over,
  };
}
