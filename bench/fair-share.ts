/**
 * Fair share versus first come first served, measured on real BullMQ and Redis: 3 runners (workers whose job
 * sleeps a fixed time), 6 repositories in 2 installations; one repository labels 60 issues, then the five others
 * 4 each. Prints per-repository waits (p50/p95), each small repository's first wait in job durations, Jain's
 * fairness index of waits normalised by demand, runner utilisation while work waits, and the dispatcher's cost.
 *   npx tsx bench/fair-share.ts            (REDIS_URL, else a throwaway redis-server on a free port)
 *   JOB_MS=200 npx tsx bench/fair-share.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { FairShare } from '../src/queue/fairShare/dispatcher.js';
import { startDispatchLoop } from '../src/queue/fairShare/loop.js';
import { createQueue, enqueueJob } from '../src/queue/queue.js';
import { QUEUE_NAME, type JobData } from '../src/queue/schema.js';

const JOB_MS = Number(process.env.JOB_MS ?? 200);
const RUNNERS = 3;
const BIG = 60;
const SMALL = 4;
const REPOS = [
  ['acme', 'big'],
  ['acme', 'r1'],
  ['acme', 'r2'],
  ['beta', 'r3'],
  ['beta', 'r4'],
  ['beta', 'r5'],
] as const;

interface Run {
  name: string;
  label: Map<string, number>;
  start: Map<string, number>;
  end: Map<string, number>;
  repoOf: Map<string, string>;
  /** Mean wall time of the runner's hand-off at the end of each job (fair share only). */
  handOffMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function job(owner: string, repo: string, issueNumber: number): JobData {
  return {
    installationId: owner === 'acme' ? 1 : 2,
    owner,
    repo,
    issueNumber,
    title: 't',
    body: 'b',
    defaultBranch: 'main',
    triggeredBy: { login: 'u', id: 1 },
    attempt: 1,
    trigger: 'label',
    enqueuedAt: new Date().toISOString(),
  };
}

/** The workload: the big repository's 60 labels, then each small repository's 4, interleaved. */
function workload(): JobData[] {
  const jobs: JobData[] = [];
  for (let i = 1; i <= BIG; i++) jobs.push(job('acme', 'big', i));
  for (let i = 1; i <= SMALL; i++) for (const [owner, repo] of REPOS.slice(1)) jobs.push(job(owner, repo, i));
  return jobs;
}

async function runOnce(url: string, name: string, fair: boolean): Promise<Run> {
  const prefix = `bench-${name}-${Date.now()}`;
  const conns: Redis[] = [];
  const connect = () => {
    const c = new Redis(url, { maxRetriesPerRequest: null });
    conns.push(c);
    return c;
  };
  const conn = connect();
  const plain = connect();
  const queue = createQueue(conn, { prefix });
  const run: Run = { name, label: new Map(), start: new Map(), end: new Map(), repoOf: new Map() };
  // What runner/handOff.ts does in a runner: the slot of a job whose work is done goes to the next job at once.
  const runnerSide = new FairShare(queue, plain, {});
  const handOffMs: number[] = [];
  const workers = Array.from(
    { length: RUNNERS },
    () =>
      new Worker(
        QUEUE_NAME,
        async (j) => {
          run.start.set(j.id!, Date.now());
          await sleep(JOB_MS);
          run.end.set(j.id!, Date.now());
          if (fair) {
            const t0 = performance.now();
            await runnerSide.handOff(j.id!);
            handOffMs.push(performance.now() - t0);
          }
          return { outcome: 'no_patch', exitReason: 'bench', turns: 0, elapsedSeconds: JOB_MS / 1000 };
        },
        { connection: connect(), prefix, concurrency: 1 },
      ),
  );
  await Promise.all(workers.map((w) => w.waitUntilReady()));

  const share = new FairShare(queue, plain, { slots: () => RUNNERS });
  const stop = fair ? startDispatchLoop(share, { connection: connect(), prefix }) : null;

  for (const d of workload()) {
    const { job: added } = fair ? await share.enqueue(d) : await enqueueJob(queue, d);
    run.label.set(added.id!, Date.now());
    run.repoOf.set(added.id!, `${d.owner}/${d.repo}`);
  }
  while (run.end.size < run.label.size) await sleep(20);
  if (fair) run.handOffMs = handOffMs.reduce((a, b) => a + b, 0) / Math.max(1, handOffMs.length);
  await stop?.();
  await Promise.all(workers.map((w) => w.close()));
  await queue.obliterate({ force: true });
  await queue.close();
  const keys = await plain.keys(`${prefix}*`);
  if (keys.length) await plain.del(...keys);
  await Promise.all(conns.map((c) => c.quit()));
  return run;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Jain's index of x_i = mean wait / demand (jobs asked): 1 when every repository waits alike per job it asked. */
function jain(run: Run): number {
  const xs = [...new Set(run.repoOf.values())].map((repo) => {
    const waits = waitsOf(run, repo);
    return waits.reduce((a, b) => a + b, 0) / waits.length / waits.length;
  });
  const sum = xs.reduce((a, b) => a + b, 0);
  return (sum * sum) / (xs.length * xs.reduce((a, b) => a + b * b, 0));
}

function waitsOf(run: Run, repo: string): number[] {
  return [...run.repoOf].filter(([, r]) => r === repo).map(([id]) => run.start.get(id)! - run.label.get(id)!);
}

/**
 * Busy runner time over runner time, from the first label until the last job started (work was waiting), and the
 * idle runner time per job started in that window (what handing a job to a runner costs).
 */
function utilisation(run: Run): { share: number; idleMsPerJob: number } {
  const from = Math.min(...run.label.values());
  const until = Math.max(...run.start.values());
  let busy = 0;
  for (const [id, s] of run.start) busy += Math.max(0, Math.min(run.end.get(id)!, until) - Math.max(s, from));
  const capacity = RUNNERS * (until - from);
  return { share: busy / capacity, idleMsPerJob: (capacity - busy) / run.start.size };
}

/** The first job of a small repository: how many job durations after that repository's first label it started. */
function firstWait(run: Run, repo: string): number {
  const ids = [...run.repoOf].filter(([, r]) => r === repo).map(([id]) => id);
  const label = Math.min(...ids.map((id) => run.label.get(id)!));
  return (Math.min(...ids.map((id) => run.start.get(id)!)) - label) / JOB_MS;
}

function report(runs: Run[]): void {
  const cell = (s: string | number, w = 22) => String(s).padEnd(w);
  console.log(`${RUNNERS} runners, job ${JOB_MS} ms; acme/big labels ${BIG} issues, then 5 others ${SMALL} each\n`);
  console.log(
    cell('repository') + runs.map((r) => cell(`${r.name}: p50 / p95 wait`, 30)).join('') + 'first job (job durations)',
  );
  for (const [owner, repo] of REPOS) {
    const name = `${owner}/${repo}`;
    const waits = runs.map((r) => waitsOf(r, name));
    const first = runs.map((r) => firstWait(r, name).toFixed(1)).join(' / ');
    console.log(cell(name) + waits.map((w) => cell(`${pct(w, 50)} ms / ${pct(w, 95)} ms`, 30)).join('') + first);
  }
  console.log();
  for (const r of runs) {
    const small = REPOS.slice(1).map(([o, n]) => firstWait(r, `${o}/${n}`));
    const u = utilisation(r);
    console.log(
      `${cell(r.name, 6)} Jain(wait/demand) ${jain(r).toFixed(3)}  utilisation while work waits ${(100 * u.share).toFixed(1)}% ` +
        `(idle ${u.idleMsPerJob.toFixed(1)} ms/job)  ` +
        `worst small first start ${Math.max(...small).toFixed(1)} job durations` +
        (r.handOffMs !== undefined ? `  runner hand-off ${r.handOffMs.toFixed(2)} ms/job` : ''),
    );
  }
}

/** The dispatcher alone: hold `n` jobs over the 6 repositories, then time passes that promote them one by one. */
async function dispatchCost(url: string, n = 300): Promise<{ passMs: number }> {
  const prefix = `bench-cost-${Date.now()}`;
  const conn = new Redis(url, { maxRetriesPerRequest: null });
  const plain = new Redis(url, { maxRetriesPerRequest: null });
  const queue = createQueue(conn, { prefix });
  let slots = 0;
  const share = new FairShare(queue, plain, { slots: () => slots });
  for (let i = 1; i <= n; i++) {
    const [owner, repo] = REPOS[i % REPOS.length]!;
    await share.enqueue(job(owner, repo, i));
  }
  await share.kick();
  // One job per pass, as in service (a slot frees, one job moves): the pass's fixed cost is included.
  const t0 = performance.now();
  for (let i = 1; i <= n; i++) {
    slots = i;
    await share.dispatch();
  }
  const passMs = (performance.now() - t0) / n;
  await queue.obliterate({ force: true });
  await queue.close();
  const keys = await plain.keys(`${prefix}*`);
  if (keys.length) await plain.del(...keys);
  await Promise.all([conn.quit(), plain.quit()]);
  return { passMs };
}

async function redisUrl(): Promise<{ url: string; child?: ChildProcess }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL };
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  await sleep(300);
  return { url: `redis://127.0.0.1:${port}`, child };
}

const { url, child } = await redisUrl();
try {
  const fifo = await runOnce(url, 'fifo', false);
  const fair = await runOnce(url, 'fair', true);
  report([fifo, fair]);
  const cost = await dispatchCost(url);
  console.log(
    `dispatcher alone: ${cost.passMs.toFixed(2)} ms per job (one pass per freed slot: stale check, pick, promote)`,
  );
} finally {
  child?.kill();
}
