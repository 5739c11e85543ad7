import { STRIDE } from './scripts.js';

/**
 * The dispatch order replayed in JavaScript from a snapshot of the line (src/queue/fairShare/scripts.ts PICK),
 * so the status comment's "n-th in line" is the place the dispatcher will really give the job.
 */

export interface RepoLine {
  name: string;
  pass: number;
  jobs: string[];
}
export interface InstallationLine {
  name: string;
  pass: number;
  repos: RepoLine[];
}
export interface ClassLine {
  name: string;
  insts: InstallationLine[];
}

/** Lowest pass first; equal passes by name in byte order, as a Redis sorted set orders them. */
function lowest<T extends { name: string; pass: number }>(xs: T[]): T | undefined {
  let best: T | undefined;
  for (const x of xs) {
    if (!best || x.pass < best.pass || (x.pass === best.pass && x.name < best.name)) best = x;
  }
  return best;
}

export function installationStride(weight: number | undefined): number {
  return Math.floor(STRIDE / (weight && weight > 0 ? weight : 1));
}

/** Job ids in the order PICK would hand them out, follow-up class first; `limit` bounds the work. */
export function fairOrder(classes: ClassLine[], weights: ReadonlyMap<string, number>, limit = 10_000): string[] {
  const order: string[] = [];
  for (const cls of classes) {
    const insts = cls.insts.map((i) => ({ ...i, repos: i.repos.map((r) => ({ ...r, jobs: [...r.jobs] })) }));
    while (order.length < limit) {
      const inst = lowest(insts.filter((i) => i.repos.some((r) => r.jobs.length > 0)));
      if (!inst) break;
      const repo = lowest(inst.repos.filter((r) => r.jobs.length > 0))!;
      order.push(repo.jobs.shift()!);
      repo.pass += STRIDE;
      inst.pass += installationStride(weights.get(inst.name));
    }
  }
  return order;
}
