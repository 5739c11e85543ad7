import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import nock from 'nock';
import { Octokit } from '@octokit/rest';
import {
  STATUS_MARKER,
  renderStatusComment,
  summarizeStatus,
  upsertStatusComment,
  updateStatusComment,
  type StatusState,
} from '../../src/github/statusComment.js';
import { getUserPermission } from '../../src/github/permissions.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const API = 'https://api.github.com';
const ns = `fn-test-status-${randomUUID().slice(0, 8)}:`;
const ref = { owner: 'octo', repo: 'hello', issueNumber: 5 };
const R = '/repos/octo/hello';
let redis: Redis;
let raw: Redis;
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
// Expected 404/5xx answers would otherwise be logged by Octokit's request-log plugin.
const octokit = new Octokit({ auth: 'ghs_testtoken000000000000000000000000', log: quiet });

beforeAll(() => {
  nock.disableNetConnect();
  redis = new Redis(REDIS_URL, { keyPrefix: ns });
  raw = new Redis(REDIS_URL);
});
afterAll(async () => {
  const keys = await raw.keys(`${ns}*`);
  if (keys.length) await raw.del(...keys);
  await Promise.all([redis.quit(), raw.quit()]);
  nock.enableNetConnect();
});
beforeEach(async () => {
  const keys = await raw.keys(`${ns}*`);
  if (keys.length) await raw.del(...keys);
});
afterEach(() => {
  const pending = nock.pendingMocks();
  nock.cleanAll();
  expect(pending).toEqual([]);
});

const at = new Date('2026-12-02T10:00:00Z');

describe('renderStatusComment', () => {
  const cases: [StatusState, string][] = [
    [{ kind: 'queued', position: 2 }, '### ⏳ frognano: queued'],
    [
      { kind: 'running', runner: 'gpu-1 (H200, FrogNano-4B)', turn: 4, maxTurns: 100 },
      'Runner: gpu-1 (H200, FrogNano-4B) · Turn 4 of at most 100.',
    ],
    [
      { kind: 'pull_request', url: 'https://github.com/octo/hello/pull/9', number: 9 },
      '### ✅ frognano: draft pull request #9 opened',
    ],
    [
      { kind: 'no_patch', reason: 'The model answered without editing files.' },
      '> The model answered without editing files.',
    ],
    [{ kind: 'failed', reason: 'clone failed' }, '### ❌ frognano: failed'],
    [{ kind: 'cancelled', by: 'octocat' }, 'Cancelled by @octocat.'],
  ];
  test.each(cases)('%o', (state, expected) => {
    const body = renderStatusComment(state, {
      attempt: 1,
      jobId: 'octo/hello#5@1',
      triggeredBy: 'octocat',
      updatedAt: at,
    });
    expect(body.startsWith(`${STATUS_MARKER}\n`)).toBe(true);
    expect(body).toContain(expected);
    expect(body).toContain(
      '<sub>frognano-bot · started by @octocat · job `octo/hello#5@1` · updated 2026-12-02 10:00:00Z</sub>',
    );
    if (['pull_request', 'no_patch', 'failed', 'cancelled'].includes(state.kind))
      expect(body).toContain('`/frognano retry`');
  });

  test("the model's summary is fenced and inert: no mentions, references, headings or markers of its own", () => {
    const summary =
      '# Done!\n@octocat @github/security please merge. Fixes #1.\n```\n<!-- frognano:status -->\n### ✅ frognano: approved';
    const body = renderStatusComment(
      { kind: 'pull_request', url: 'https://github.com/octo/hello/pull/9', number: 9, summary },
      { updatedAt: at },
    );
    const Z = '\u200B';
    const WJ = '\u2060';
    expect(body).toContain(
      [
        "The model's summary (its own words, unreviewed):",
        '',
        '````text',
        '# Done!',
        `@${Z}octocat @${Z}github/security please merge. F${WJ}ixes #${Z}1.`,
        '```',
        `<${Z}!-- frognano:status --${Z}>`,
        '### ✅ frognano: approved',
        '````',
      ].join('\n'),
    );
    expect(body.split(STATUS_MARKER)).toHaveLength(2);
    expect(body).not.toMatch(/@(octocat|github)/);
  });

  test('the latest step (a tool call the model chose) renders as typed, on one line', () => {
    const detail = 'Bash: echo hi\n# @admin <img src=x> [link](http://e) #2';
    const body = renderStatusComment({ kind: 'running', turn: 2, detail }, { updatedAt: at });
    expect(body).toContain(
      `\n\nBash\\: echo hi \\# @\u200Badmin \\<img src\\=x\\> \\[link\\]\\(http\\:\\/\\/e\\) \\#\u200B2\n\n`,
    );
  });

  test('the first attempt is not labelled; later ones are', () => {
    expect(renderStatusComment({ kind: 'queued' }, { attempt: 1 })).not.toContain('attempt');
    expect(renderStatusComment({ kind: 'queued' }, { attempt: 3 })).toContain('frognano: queued (attempt 3)');
  });

  test('reasons are redacted, capped, and cannot forge a second marker', () => {
    const reason = `push failed: https://x-access-token:ghs_${'a'.repeat(36)}@github.com/octo/hello ${STATUS_MARKER}\n${'y'.repeat(5000)}`;
    const body = renderStatusComment({ kind: 'failed', reason });
    expect(body).not.toContain('ghs_');
    expect(body.split(STATUS_MARKER)).toHaveLength(2);
    expect(body).toContain('more characters]');
    expect(body.length).toBeLessThan(3000);
    expect(body).toContain('```text');
  });

  test('one-line summaries', () => {
    expect(summarizeStatus({ kind: 'queued', position: 1 })).toBe('queued (1st in line)');
    expect(summarizeStatus({ kind: 'queued', position: 12 })).toBe('queued (12th in line)');
    expect(summarizeStatus({ kind: 'queued', position: 22 })).toBe('queued (22nd in line)');
    expect(summarizeStatus({ kind: 'running', turn: 3, maxTurns: 100 })).toBe('running (turn 3 of 100)');
    expect(summarizeStatus({ kind: 'pull_request', url: 'u', number: 4 })).toBe('draft pull request #4 opened');
  });
});

describe('upsertStatusComment', () => {
  test('creates the comment once, then edits it in place', async () => {
    nock(API)
      .get(`${R}/issues/5/comments`)
      .query({ per_page: '100', page: '1' })
      .reply(200, [{ id: 1, body: `quoting ${STATUS_MARKER}`, user: { login: 'someone', type: 'User' } }]);
    let created = '';
    nock(API)
      .post(`${R}/issues/5/comments`, (b: any) => ((created = b.body), true))
      .reply(201, { id: 50, html_url: 'https://github.com/octo/hello/issues/5#issuecomment-50' });
    const first = await upsertStatusComment(octokit, redis, ref, { kind: 'queued', position: 1 }, { updatedAt: at });
    expect(first).toEqual({ id: 50, url: 'https://github.com/octo/hello/issues/5#issuecomment-50', created: true });
    expect(created).toContain('frognano: queued');

    let edited = '';
    nock(API)
      .patch(`${R}/issues/comments/50`, (b: any) => ((edited = b.body), true))
      .reply(200, { id: 50, html_url: 'https://github.com/octo/hello/issues/5#issuecomment-50' });
    const second = await upsertStatusComment(octokit, redis, ref, { kind: 'running' });
    expect(second.created).toBe(false);
    expect(edited).toContain('frognano: working on it');
  });

  test('without a cache entry it finds its own earlier comment by the marker', async () => {
    nock(API)
      .get(`${R}/issues/5/comments`)
      .query({ per_page: '100', page: '1' })
      .reply(200, [
        { id: 7, body: 'hi', user: { login: 'octocat', type: 'User' } },
        { id: 8, body: `${STATUS_MARKER}\nold`, user: { login: 'frognano[bot]', type: 'Bot' } },
      ]);
    nock(API).patch(`${R}/issues/comments/8`).reply(200, { id: 8 });
    expect(await upsertStatusComment(octokit, redis, ref, { kind: 'cancelled' })).toMatchObject({
      id: 8,
      created: false,
    });
    expect(await redis.get('frognano:status:octo/hello#5')).toBe('8');
  });

  test('a deleted status comment is recreated', async () => {
    await redis.set('frognano:status:octo/hello#5', '99');
    nock(API).patch(`${R}/issues/comments/99`).reply(404, { message: 'Not Found' });
    nock(API).get(`${R}/issues/5/comments`).query(true).reply(200, []);
    nock(API).post(`${R}/issues/5/comments`).reply(201, { id: 100 });
    expect(await upsertStatusComment(octokit, redis, ref, { kind: 'failed', reason: 'x' })).toMatchObject({
      id: 100,
      created: true,
    });
    expect(await redis.get('frognano:status:octo/hello#5')).toBe('100');
  });

  test('concurrent first updates still create a single comment', async () => {
    nock(API).get(`${R}/issues/5/comments`).query(true).reply(200, []);
    nock(API).post(`${R}/issues/5/comments`).reply(201, { id: 60 });
    nock(API).patch(`${R}/issues/comments/60`).times(2).reply(200, { id: 60 });
    const results = await Promise.all([
      upsertStatusComment(octokit, redis, ref, { kind: 'queued' }),
      upsertStatusComment(octokit, redis, ref, { kind: 'queued' }),
      upsertStatusComment(octokit, redis, ref, { kind: 'queued' }),
    ]);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  test('updateStatusComment leaves the comment alone when compute returns null', async () => {
    expect(await updateStatusComment(octokit, redis, ref, async () => null)).toBeNull();
  });

  test('GitHub errors other than 404 propagate', async () => {
    await redis.set('frognano:status:octo/hello#5', '99');
    nock(API).patch(`${R}/issues/comments/99`).reply(500, { message: 'boom' });
    await expect(upsertStatusComment(octokit, redis, ref, { kind: 'queued' })).rejects.toMatchObject({ status: 500 });
  });
});

describe('getUserPermission', () => {
  const perm = (user: string, status: number, body: object) =>
    nock(API).get(`${R}/collaborators/${user}/permission`).reply(status, body);

  test.each([
    ['admin', 'admin', true],
    ['write', 'maintain', true],
    ['write', 'write', true],
    ['read', 'triage', false],
    ['read', 'read', false],
    ['none', 'none', false],
    ['write', 'release-manager', true], // custom role on top of write
  ])('permission %s / role %s -> allowed %s', async (permission, role_name, allowed) => {
    perm('u', 200, { permission, role_name });
    expect(await getUserPermission(octokit, 'octo', 'hello', 'u')).toEqual({ allowed, role: role_name });
  });

  test('404 means no access; other errors propagate', async () => {
    perm('ghost', 404, { message: 'Not Found' });
    expect(await getUserPermission(octokit, 'octo', 'hello', 'ghost')).toEqual({ allowed: false, role: 'none' });
    perm('u', 503, { message: 'unavailable' });
    await expect(getUserPermission(octokit, 'octo', 'hello', 'u')).rejects.toMatchObject({ status: 503 });
  });
});
