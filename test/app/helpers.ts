import { afterAll, afterEach, beforeAll, beforeEach, expect } from '@jest/globals';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Probot, ProbotOctokit } from 'probot';
import { pino } from 'pino';
import nock from 'nock';
import { Redis } from 'ioredis';
import { createQueue, type FrognanoQueue } from '../../src/queue/queue.js';
import { createFrognanoApp, type AppDeps } from '../../src/app/index.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const API = 'https://api.github.com';
export const INSTALLATION_ID = 4242;

const require = createRequire(import.meta.url);
type Example = { name: string; examples: Record<string, any>[] };
const examples: Example[] = require('@octokit/webhooks-examples/api.github.com/index.json');

/** A real example payload from @octokit/webhooks-examples, deep-copied so tests can adapt fields. */
export function example(event: string, action: string, pick: (p: any) => boolean = () => true): any {
  const list = examples.find((e) => e.name === event)?.examples ?? [];
  const found = list.find((p) => p.action === action && pick(p));
  if (!found) throw new Error(`no ${event}.${action} example`);
  return structuredClone(found);
}

/** issues.labeled example adapted: our label, an installation (the example has none). */
export function labeledPayload(
  opts: { label?: string; issueNumber?: number; state?: string; sender?: string } = {},
): any {
  const p = example('issues', 'labeled');
  p.label.name = opts.label ?? 'frognano';
  p.issue.labels = [...(p.issue.labels ?? []), p.label];
  if (opts.issueNumber) p.issue.number = opts.issueNumber;
  if (opts.state) p.issue.state = opts.state;
  if (opts.sender) p.sender.login = opts.sender;
  p.installation = { id: INSTALLATION_ID, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg==' };
  return p;
}

/** issue_comment.created example (the one that carries an installation) with our comment text. */
export function commentPayload(
  body: string,
  opts: { issueNumber?: number; commentId?: number; user?: string; userType?: string } = {},
): any {
  const p = example('issue_comment', 'created', (x) => !!x.installation);
  p.comment.body = body;
  if (opts.commentId) p.comment.id = opts.commentId;
  if (opts.issueNumber) p.issue.number = opts.issueNumber;
  if (opts.user) {
    p.comment.user.login = opts.user;
    p.sender.login = opts.user;
  }
  if (opts.userType) {
    p.comment.user.type = opts.userType;
    p.sender.type = opts.userType;
  }
  p.installation = { id: INSTALLATION_ID, node_id: p.installation.node_id };
  return p;
}

export function testPrivateKey(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
}

/**
 * Probot passes its own throttle options to every client it builds, which would replace a plain
 * `defaults({ throttle: { enabled: false } })`; a defaults function applies after them. Without this,
 * the throttling plugin spaces comment writes 3 s apart.
 */
export const TestOctokit = ProbotOctokit.defaults((opts: any) => ({
  ...opts,
  retry: { ...opts?.retry, enabled: false },
  throttle: { ...opts?.throttle, enabled: false },
}));

/** A Probot as the tests build it: App 123 with a fresh key, no retries or throttling, silent unless TEST_LOG_LEVEL. */
export function testProbot(o: { privateKey?: string; secret?: string } = {}): Probot {
  return new Probot({
    appId: 123,
    privateKey: o.privateKey ?? testPrivateKey(),
    secret: o.secret ?? 's',
    Octokit: TestOctokit,
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  });
}

export interface Harness {
  probot: Probot;
  queue: FrognanoQueue;
  /** App connection: every key it touches is under `keyPrefix`, so parallel test files never collide. */
  redis: Redis;
  raw: Redis;
  keyPrefix: string;
  close(): Promise<void>;
  reset(): Promise<void>;
}

/** `extra`: more app dependencies (fair share, quotas), made from the harness's queue and plain connection. */
export async function createHarness(
  name: string,
  privateKey = testPrivateKey(),
  extra?: (queue: FrognanoQueue, raw: Redis) => Partial<AppDeps>,
): Promise<Harness> {
  const ns = `fn-test-${name}-${randomUUID().slice(0, 8)}`;
  const keyPrefix = `${ns}:`;
  const queueConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null, keyPrefix });
  const raw = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = createQueue(queueConn, { prefix: `${ns}-bull` });
  const probot = testProbot({ privateKey, secret: 'test-secret' });
  await probot.load(createFrognanoApp({ queue, redis, ...extra?.(queue, raw) }));
  const reset = async () => {
    await queue.obliterate({ force: true });
    const keys = await raw.keys(`${keyPrefix}*`);
    if (keys.length) await raw.del(...keys);
  };
  return {
    probot,
    queue,
    redis,
    raw,
    keyPrefix,
    reset,
    close: async () => {
      await reset();
      const bull = await raw.keys(`${ns}-bull:*`);
      if (bull.length) await raw.del(...bull);
      await queue.close();
      await Promise.all([queueConn.quit(), redis.quit(), raw.quit()]);
    },
  };
}

export interface AppHarnessOptions {
  /** More app dependencies, as createHarness's `extra`. */
  extra?: (queue: FrognanoQueue, raw: Redis) => Partial<AppDeps>;
  /** Once the app is loaded: what the file runs beside it (a worker, a server). */
  setUp?: (h: Harness) => Promise<void> | void;
  /** Before the harness closes: stops what setUp started. */
  tearDown?: (h: Harness) => Promise<void> | void;
  /** Before each test, after the harness's reset: the file's own state. */
  reset?: (h: Harness) => Promise<void> | void;
  /** false: one state for the whole file (its tests build on each other), no reset between tests. */
  resetEach?: boolean;
  /** After each test, every GitHub route it declared must have been used: exactly the expected calls happened. */
  strict?: boolean;
}

/**
 * An app test file's harness, as Probot's tests build their app with one helper: made before the file's tests with
 * no network but 127.0.0.1 (GitHub is nock), reset before each (queue and keys emptied, nock's routes cleared, the
 * installation token exchange answered), closed after them. The returned harness is live once beforeAll has run.
 */
export function useAppHarness(name: string, o: AppHarnessOptions = {}): Harness {
  let live: Harness | undefined;
  const h = () => {
    if (!live) throw new Error(`useAppHarness(${name}): used before beforeAll built it`);
    return live;
  };
  beforeAll(async () => {
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
    live = await createHarness(name, undefined, o.extra);
    if (o.resetEach === false) nockInstallationToken();
    await o.setUp?.(live);
  });
  afterAll(async () => {
    if (live) await o.tearDown?.(live);
    await live?.close();
    nock.cleanAll();
    nock.enableNetConnect();
  });
  if (o.resetEach !== false) {
    beforeEach(async () => {
      await h().reset();
      nock.cleanAll();
      nockInstallationToken();
      await o.reset?.(h());
    });
  }
  if (o.strict) {
    afterEach(() => {
      expect(nock.pendingMocks().filter((m) => !m.includes('access_tokens'))).toEqual([]);
    });
  }
  return {
    get probot() {
      return h().probot;
    },
    get queue() {
      return h().queue;
    },
    get redis() {
      return h().redis;
    },
    get raw() {
      return h().raw;
    },
    get keyPrefix() {
      return h().keyPrefix;
    },
    close: () => h().close(),
    reset: () => h().reset(),
  };
}

/** nock for GitHub: the installation token exchange Probot does before any installation call. */
export function nockInstallationToken(): nock.Scope {
  return nock(API).persist().post(`/app/installations/${INSTALLATION_ID}/access_tokens`).reply(201, {
    token: 'ghs_testinstallationtoken000000000000',
    expires_at: '2099-01-01T00:00:00Z',
    permissions: {},
    repository_selection: 'all',
  });
}

export function nockPermission(user: string, permission: string, roleName = permission): nock.Scope {
  return nock(API)
    .get(`/repos/Codertocat/Hello-World/collaborators/${user}/permission`)
    .reply(200, { permission, role_name: roleName, user: { login: user } });
}

export function receive(probot: Probot, name: string, payload: any, id: string = randomUUID()) {
  return probot.receive({ id, name, payload } as any);
}

/** The bot's own pull request as webhook payloads and the REST API carry it (Codertocat/Hello-World). */
export function botPullRequestSlice(o: { number: number; head: string; sha: string; base: string }) {
  const full_name = 'Codertocat/Hello-World';
  return {
    number: o.number,
    state: 'open',
    html_url: `https://github.com/${full_name}/pull/${o.number}`,
    user: { login: 'frognano[bot]', id: 1, type: 'Bot' },
    head: { ref: o.head, sha: o.sha, repo: { full_name } },
    base: { ref: o.base, repo: { full_name } },
  };
}

/** issue_comment.created (the real example) on pull request `pullNumber`. */
export function commentOnPullRequest(
  body: string,
  o: { pullNumber: number; commentId: number; user: string; userId?: number },
): any {
  const p = commentPayload(body, { issueNumber: o.pullNumber, commentId: o.commentId, user: o.user });
  if (o.userId) p.comment.user.id = o.userId;
  const url = `/repos/Codertocat/Hello-World/pulls/${o.pullNumber}`;
  p.issue.pull_request = {
    url: `${API}${url}`,
    html_url: `https://github.com/Codertocat/Hello-World/pull/${o.pullNumber}`,
  };
  return p;
}

/** pull_request_review.submitted (the real example): a commented review by `user` on the pull request `pr`. */
export function reviewOnPullRequest(o: {
  id: number;
  body: string | null;
  user: string;
  userId?: number;
  pr: ReturnType<typeof botPullRequestSlice>;
}): any {
  const p = example('pull_request_review', 'submitted', (x) => !!x.installation);
  p.installation = { id: INSTALLATION_ID };
  p.review = {
    ...p.review,
    id: o.id,
    body: o.body,
    state: 'commented',
    user: { ...p.review.user, login: o.user, id: o.userId ?? 7, type: 'User' },
  };
  p.sender = { ...p.sender, login: o.user };
  const head = { ...p.pull_request.head, ...o.pr.head, repo: { ...p.pull_request.head.repo, ...o.pr.head.repo } };
  const base = { ...p.pull_request.base, ...o.pr.base, repo: { ...p.pull_request.base.repo, ...o.pr.base.repo } };
  p.pull_request = { ...p.pull_request, ...o.pr, head, base };
  return p;
}
