import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
// s3rver is CommonJS and untyped: a real S3 HTTP server, in-process, on loopback.
import S3rver from 's3rver';
import { LocalObjectStore } from '../../src/runs/localObjectStore.js';
import type { ObjectStore } from '../../src/runs/objectStore.js';
import { S3ObjectStore } from '../../src/runs/s3ObjectStore.js';
import { RoundTooLargeError, TrajectoryStore } from '../../src/runs/trajectoryStore.js';
import { trajectoryStoreFromEnv } from '../../src/runs/config.js';
import { runPageUrl, publicUrlFromEnv } from '../../src/runs/url.js';
import { makeRound } from './fixture.js';

const DAY = 24 * 3600 * 1000;
const TOKEN = `ghs_${'A'.repeat(36)}`;

let dir: string;
let s3: { close(): Promise<void> };
let s3Store: S3ObjectStore;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-store-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: path.join(dir, 's3'),
    configureBuckets: [{ name: 'runs' }],
  });
  const address = await server.run();
  s3 = server;
  s3Store = new S3ObjectStore({
    bucket: 'runs',
    prefix: 'frognano',
    endpoint: `http://127.0.0.1:${address.port}`,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
});

afterAll(async () => {
  s3Store?.destroy();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

const backends: [string, () => ObjectStore][] = [
  ['local directory', () => new LocalObjectStore(path.join(dir, 'local'))],
  ['S3 (s3rver)', () => s3Store],
];

describe.each(backends)('TrajectoryStore on %s', (_name, backend) => {
  it('stores rounds under owner/repo/issue/round, lists them in order and reads them back', async () => {
    const store = new TrajectoryStore(backend());
    const r1 = makeRound({ round: 1, steps: 5, bytes: 20_000 });
    const r0 = makeRound({ round: 0, steps: 5, bytes: 20_000 });
    await store.putRound(r1);
    await store.putRound(r0);
    const list = await store.listRounds({ owner: 'Octo', repo: 'Demo', issueNumber: 12 });
    expect(list.map((r) => [r.round, r.kind, r.steps])).toEqual([
      [0, 'draft', 5],
      [1, 'follow-up', 5],
    ]);
    const back = await store.getRound({ owner: 'octo', repo: 'demo', issueNumber: 12, round: 1 });
    expect(back?.trajectory.steps[2]!.assistant.content).toBe(r1.trajectory.steps[2]!.assistant.content);
    expect(back?.patch).toBe(r1.patch);
    expect(await store.getRound({ owner: 'octo', repo: 'demo', issueNumber: 12, round: 7 })).toBeNull();
    expect(await store.listRounds({ owner: 'octo', repo: 'demo', issueNumber: 99 })).toEqual([]);
    expect(await store.nextRound({ owner: 'octo', repo: 'demo', issueNumber: 12 })).toBe(2);
    expect(await store.nextRound({ owner: 'octo', repo: 'demo', issueNumber: 99 })).toBe(0);
  });

  it('redacts secrets before anything is written', async () => {
    const store = new TrajectoryStore(backend());
    const r = makeRound({ issueNumber: 40, steps: 2, bytes: 5_000 });
    r.trajectory.steps[0]!.observations[0]!.observation = `token ${TOKEN} leaked`;
    r.summary.trigger = `label by ${TOKEN}`;
    await store.putRound(r);
    const back = await store.getRound({ ...r.ref });
    expect(JSON.stringify(back)).not.toContain(TOKEN);
    expect(back!.trajectory.steps[0]!.observations[0]!.observation).toContain('[REDACTED]');
    expect(JSON.stringify(await store.listRounds(r.ref))).not.toContain(TOKEN);
  });

  it('bounds a round: long texts are clipped until it fits, and a round that cannot fit is refused', async () => {
    const store = new TrajectoryStore(backend(), { maxRoundBytes: 300_000 });
    const r = makeRound({ issueNumber: 41, steps: 10, bytes: 2_000_000 });
    const written = await store.putRound(r);
    expect(written).toBeLessThanOrEqual(300_000);
    const back = await store.getRound(r.ref);
    expect(back!.trajectory.steps).toHaveLength(10);
    expect(back!.trajectory.steps[0]!.observations[0]!.observation).toContain('characters cut to fit the store');
    await expect(new TrajectoryStore(backend(), { maxRoundBytes: 1000 }).putRound(r)).rejects.toThrow(
      RoundTooLargeError,
    );
  });

  it('refuses keys that could leave their folder', async () => {
    const store = new TrajectoryStore(backend());
    await expect(store.listRounds({ owner: '..', repo: 'x', issueNumber: 1 })).rejects.toThrow(/not a valid key part/);
    await expect(store.putRound(makeRound({ owner: 'a/b', steps: 1, bytes: 1000 }))).rejects.toThrow(
      /not a valid key part/,
    );
  });

  it('sweeps rounds older than the retention period', async () => {
    const store = new TrajectoryStore(backend(), { retentionDays: 30 });
    await store.putRound(makeRound({ issueNumber: 50, steps: 1, bytes: 1000 }));
    expect(await store.sweep(new Date(Date.now() + 29 * DAY))).toBe(0);
    expect(await store.sweep(new Date(Date.now() + 31 * DAY))).toBeGreaterThanOrEqual(2);
    expect(await store.listRounds({ owner: 'octo', repo: 'demo', issueNumber: 50 })).toEqual([]);
  });
});

describe('LocalObjectStore', () => {
  it('keeps files private to the owner, sweeps by modification time and leaves no empty folders', async () => {
    const root = path.join(dir, 'sweep');
    const store = new TrajectoryStore(new LocalObjectStore(root), { retentionDays: 10 });
    await store.putRound(makeRound({ issueNumber: 1, steps: 1, bytes: 1000 }));
    await store.putRound(makeRound({ issueNumber: 2, steps: 1, bytes: 1000 }));
    const old = path.join(root, 'octo/demo/1');
    expect((await stat(path.join(old, '0.round.json'))).mode & 0o777).toBe(0o600);
    const past = new Date(Date.now() - 11 * DAY);
    for (const f of await readdir(old)) await utimes(path.join(old, f), past, past);
    expect(await store.sweep()).toBe(2);
    expect(await readdir(path.join(root, 'octo/demo'))).toEqual(['2']);
  });
});

describe('configuration', () => {
  it('reads the store, retention and bound from the environment', async () => {
    const local = trajectoryStoreFromEnv({ FROGNANO_TRAJECTORY_STORE: 'runs-dir' }, '/srv/app');
    expect(local.description).toBe('directory /srv/app/runs-dir');
    const remote = trajectoryStoreFromEnv({
      FROGNANO_TRAJECTORY_STORE: 's3://bucket/pre/fix',
      FROGNANO_S3_ENDPOINT: 'http://minio:9000',
    });
    expect(remote.description).toBe('s3://bucket/pre/fix/ at http://minio:9000');
    expect(trajectoryStoreFromEnv({}, '/srv/app').description).toBe('directory /srv/app/.frognano/runs');
    expect(() => trajectoryStoreFromEnv({ FROGNANO_TRAJECTORY_RETENTION_DAYS: '0' })).toThrow(/positive/);
  });

  it('builds page URLs from FROGNANO_PUBLIC_URL', () => {
    const base = publicUrlFromEnv({ FROGNANO_PUBLIC_URL: 'https://frognano.example.org/' });
    expect(runPageUrl(base!, { owner: 'octo', repo: 'demo', issueNumber: 12 })).toBe(
      'https://frognano.example.org/runs/octo/demo/12',
    );
    expect(runPageUrl(base!, { owner: 'octo', repo: 'demo.js', issueNumber: 12, round: 2 })).toBe(
      'https://frognano.example.org/runs/octo/demo.js/12/2',
    );
    expect(publicUrlFromEnv({})).toBeUndefined();
    expect(() => publicUrlFromEnv({ FROGNANO_PUBLIC_URL: 'ftp://x' })).toThrow(/http/);
  });
});
