import { beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { useQueueRedis, REDIS_URL } from '../support/queueRedis.js';
import { Redis } from 'ioredis';
import { Worker } from 'bullmq';
import { enqueueJob } from '../../src/queue/queue.js';
import { QUEUE_NAME, type JobData } from '../../src/queue/schema.js';
import { followUpJob, issueJob } from '../support/tenantJobs.js';
import { FairShare, HOLD_MS } from '../../src/queue/fairShare/dispatcher.js';
import { fairShareBacklog } from '../../src/queue/fairShare/backlog.js';

const q = useQueueRedis('fair', { emptyEach: true, keyPrefix: false });
let slots = 0;
let fair: FairShare;

let issue = 0;
const data = (owner: string, repo: string) => issueJob(owner, repo, ++issue);
const followUp = (owner: string, repo: string) => followUpJob(owner, repo, ++issue);

/** Adds jobs in order; returns their ids with a short name `repo#n` for readable expectations. */
async function add(list: JobData[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const d of list) {
    const { job } = await fair.enqueue(d);
    names.set(job.id!, `${d.repo}${d.followUp ? '!' : ''}`);
  }
  await new Promise((r) => setTimeout(r, 20)); // enqueue's own kick (slots 0: a no-op) settles
  return names;
}

beforeAll(() => {
  fair = new FairShare(q.queue, q.redis, { slots: () => slots });
});
beforeEach(() => {
  slots = 0;
});

describe('fair share order', () => {
  test('installations by weight, then repositories round robin; positions match the dispatch order', async () => {
    await fair.setWeights(new Map([['acme', 2]]));
    const names = await add([
      ...['x', 'x', 'x'].map((r) => data('acme', r)),
      ...['y', 'y', 'y'].map((r) => data('acme', r)),
      ...['z', 'z', 'z'].map((r) => data('beta', r)),
    ]);
    expect(await q.queue.getJobCountByTypes('delayed')).toBe(9);
    expect(await fair.backlog()).toBe(9);
    expect(await fairShareBacklog(q.redis, q.bullPrefix)).toBe(9); // what a backlog metric reads
    const predicted = new Map<string, number | undefined>();
    for (const id of names.keys()) predicted.set(id, await fair.position(id));

    slots = 100;
    const moved = await fair.dispatch();
    expect(moved.map((m) => names.get(m.jobId))).toEqual(['x', 'z', 'y', 'x', 'z', 'y', 'x', 'z', 'y']);
    moved.forEach((m, i) => expect(predicted.get(m.jobId)).toBe(i + 1));
    expect(await q.queue.getJobCountByTypes('waiting')).toBe(9);
    expect(await fair.backlog()).toBe(0);
  });

  test('a burst from one repository does not starve a repository that comes later', async () => {
    const names = await add(Array.from({ length: 20 }, () => data('acme', 'big')));
    slots = 2;
    await fair.dispatch();
    const late = await add([data('acme', 'small'), data('beta', 'other')]);
    const lateIds = [...late.keys()];
    // beta was idle: it starts at the line's virtual time and goes next; acme's small repo right after.
    expect(await fair.position(lateIds[1]!)).toBe(3);
    expect(await fair.position(lateIds[0]!)).toBe(4);
    expect(names.size).toBe(20);
  });

  test('follow-up rounds go ahead of fresh issues', async () => {
    const names = await add([data('acme', 'x'), data('beta', 'y'), followUp('beta', 'y'), followUp('acme', 'x')]);
    slots = 10;
    const moved = await fair.dispatch();
    expect(moved.map((m) => names.get(m.jobId))).toEqual(['x!', 'y!', 'x', 'y']);
  });

  test('positionIfAdded is the place a job gets once added', async () => {
    await add([data('acme', 'x'), data('acme', 'x'), data('beta', 'y')]);
    const next = data('gamma', 'z');
    const predicted = await fair.positionIfAdded(next);
    const { job } = await fair.enqueue(next);
    expect(await fair.position(job.id!)).toBe(predicted);
    expect(predicted).toBe(3);
  });

  test('a cancelled held job leaves the line; a removed job that was picked is passed over', async () => {
    const names = await add([data('acme', 'x'), data('acme', 'x'), data('beta', 'y')]);
    const [first, second, third] = [...names.keys()];
    expect(await fair.position(third!)).toBe(2);
    await (await q.queue.getJob(first!))!.remove();
    expect(await fair.forget(first!)).toBe(true);
    expect(await fair.position(second!)).toBe(1);
    expect(await fair.position(third!)).toBe(2);
    await (await q.queue.getJob(second!))!.remove(); // not forgotten: the dispatcher meets it and passes over
    slots = 10;
    expect((await fair.dispatch()).map((m) => m.jobId)).toEqual([second, third]);
    expect((await q.queue.getJobs(['waiting'])).map((j) => j.id)).toEqual([third]);
  });
});

describe('recovery', () => {
  test('a held job that never got in line (the app stopped between the two steps) is lined up once', async () => {
    const names = await add([data('acme', 'x')]);
    // What fair.enqueue() does before HOLD: the job is added held, and the app dies before it joins its line.
    const { job } = await enqueueJob(q.queue, data('beta', 'y'), { delayMs: HOLD_MS });
    expect(await fair.position(job.id!)).toBeUndefined();
    expect(await fair.lineUpStranded()).toBe(1);
    expect(await fair.lineUpStranded()).toBe(0); // in line already: not twice
    expect(await fair.position(job.id!)).toBe(2);
    slots = 10;
    const moved = (await fair.dispatch()).map((m) => m.jobId);
    expect(moved).toEqual([...names.keys(), job.id]);
    expect(await fair.lineUpStranded()).toBe(0); // promoted jobs are not delayed any more
  });
});

describe('hand-off by the runner', () => {
  test('an active job marked ending frees its slot once, for the slots the app last counted', async () => {
    const runnerSide = new FairShare(q.queue, q.redis, {});
    const worker = new Worker(QUEUE_NAME, null, { connection: q.conn, prefix: q.bullPrefix, autorun: false });
    try {
      const [a, b, c] = [...(await add([data('acme', 'x'), data('beta', 'y'), data('gamma', 'z')])).keys()];
      slots = 1;
      expect((await fair.dispatch()).map((m) => m.jobId)).toEqual([a]); // stores slots = 1 for the runners
      expect((await worker.getNextJob('tok', { block: false }))?.id).toBe(a);
      expect(await runnerSide.dispatch()).toEqual([]); // a holds the only slot
      await runnerSide.handOff(a!);
      expect((await q.queue.getJobs(['waiting'])).map((j) => j.id)).toEqual([b]);
      await runnerSide.handOff(a!); // the same job again: no second slot
      expect(await fair.dispatch()).toEqual([]);
      expect((await q.queue.getJobs(['waiting'])).map((j) => j.id)).toEqual([b]);
      expect(await fair.position(c!)).toBe(2);
    } finally {
      await worker.close();
    }
  });
});

describe('dispatcher concurrency', () => {
  test('two dispatchers at once never exceed the slots, lose or duplicate a job', async () => {
    const other = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const fair2 = new FairShare(q.queue, other, { slots: () => slots });
    const worker = new Worker(QUEUE_NAME, null, { connection: q.conn, prefix: q.bullPrefix, autorun: false });
    try {
      const ids = [...(await add(Array.from({ length: 30 }, (_, i) => data(`o${i % 3}`, `r${i % 5}`)))).keys()];
      slots = 3;
      const done: string[] = [];
      while (done.length < ids.length) {
        await Promise.all([fair.dispatch(), fair2.dispatch(), fair.dispatch(), fair2.dispatch()]);
        const counts = await q.queue.getJobCounts('waiting', 'active');
        expect(counts.waiting! + counts.active!).toBeLessThanOrEqual(3);
        const job = await worker.getNextJob('tok', { block: false });
        expect(job).toBeDefined();
        await job!.moveToCompleted({ outcome: 'no_patch', exitReason: 'x', turns: 0, elapsedSeconds: 0 }, 'tok', false);
        done.push(job!.id!);
      }
      expect(new Set(done).size).toBe(ids.length);
      expect(new Set(done)).toEqual(new Set(ids));
      expect(await fair.backlog()).toBe(0);
    } finally {
      await worker.close();
      await other.quit();
    }
  });
});
