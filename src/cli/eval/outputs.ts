import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { InstanceSchema, type Instance } from '../../eval/instance.js';
import { InstanceRecordSchema, PredictionSchema, type InstanceRecord, type Prediction } from '../../eval/record.js';

export { InstanceRecordSchema, PredictionSchema, type InstanceRecord, type Prediction };

/** Files eval writes in --out. */
export const FILES = {
  predictions: 'predictions.jsonl',
  summary: 'eval-summary.json',
  dataset: 'eval-dataset.json',
  instances: 'instances',
  /** `--queue`: the run's id (its jobs' ids) and tenant, so a second run finds the jobs the first queued. */
  queue: 'eval-queue.json',
} as const;

/** What eval reads back of its own files (a predictions file or record bigger than this is refused). */
const MAX_READ_BYTES = 512 * 1024 * 1024;

async function readBounded(file: string): Promise<string | undefined> {
  const info = await fs.stat(file).catch(() => undefined);
  if (!info?.isFile()) return undefined;
  if (info.size > MAX_READ_BYTES) throw new Error(`${file} is larger than ${MAX_READ_BYTES} bytes`);
  return fs.readFile(file, 'utf8');
}

/** The predictions already in `out`, by instance id (a resumed run skips these). A bad line is an error. */
export async function readPredictions(out: string): Promise<Map<string, Prediction>> {
  const text = (await readBounded(path.join(out, FILES.predictions))) ?? '';
  const done = new Map<string, Prediction>();
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const r = PredictionSchema.safeParse(JSON.parse(line));
    if (!r.success) throw new Error(`${FILES.predictions} line ${i + 1} is not a prediction`);
    done.set(r.data.instance_id, r.data);
  });
  return done;
}

/** Appends to predictions.jsonl one line at a time, in order, however many workers finish at once. */
export class PredictionWriter {
  private chain: Promise<void> = Promise.resolve();
  constructor(private readonly out: string) {}

  append(p: Prediction): Promise<void> {
    const line = `${JSON.stringify(PredictionSchema.parse(p))}\n`;
    this.chain = this.chain.then(() => fs.appendFile(path.join(this.out, FILES.predictions), line));
    return this.chain;
  }
}

export function instanceDir(out: string, id: string): string {
  return path.join(out, FILES.instances, id);
}

/** Written through a temporary file and a rename, so a reader (or a Ctrl-C) never sees half of it. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await fs.writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await fs.rename(tmp, file);
}

export async function writeRecord(out: string, record: InstanceRecord): Promise<void> {
  const dir = instanceDir(out, record.instance_id);
  await fs.mkdir(dir, { recursive: true });
  await writeJsonAtomic(path.join(dir, 'result.json'), record);
}

export async function readRecord(out: string, id: string): Promise<InstanceRecord | undefined> {
  const text = await readBounded(path.join(instanceDir(out, id), 'result.json'));
  if (text === undefined) return undefined;
  const r = InstanceRecordSchema.safeParse(JSON.parse(text));
  return r.success ? r.data : undefined;
}

/**
 * eval-dataset.json: every instance this output directory has been asked to run (this run's and earlier runs'), in
 * full: the dataset the harness grades the predictions against. A JSON array, which every swebench version loads.
 */
export async function mergeDataset(out: string, chosen: Instance[]): Promise<Instance[]> {
  const earlier = await readOutDataset(out);
  const byId = new Map<string, Instance>(earlier.map((i) => [i.instance_id, i]));
  for (const i of chosen) byId.set(i.instance_id, i);
  const all = [...byId.values()];
  await writeJsonAtomic(path.join(out, FILES.dataset), all);
  return all;
}

export async function readOutDataset(out: string): Promise<Instance[]> {
  const text = await readBounded(path.join(out, FILES.dataset));
  if (!text) return [];
  const r = z.array(InstanceSchema).safeParse(JSON.parse(text));
  if (!r.success) throw new Error(`${FILES.dataset} is not a list of instances`);
  return r.data;
}

export interface Totals {
  instances: number;
  finished: number;
  errors: number;
  not_run: number;
  patches: number;
  turns: number;
  context_tokens: number;
  completion_tokens: number;
  wall_sec: number;
  exit_reasons: Record<string, number>;
}

export function totalsOf(ids: string[], records: Map<string, InstanceRecord>): Totals {
  const t: Totals = {
    instances: ids.length,
    finished: 0,
    errors: 0,
    not_run: 0,
    patches: 0,
    turns: 0,
    context_tokens: 0,
    completion_tokens: 0,
    wall_sec: 0,
    exit_reasons: {},
  };
  for (const id of ids) {
    const r = records.get(id);
    if (!r) {
      t.not_run++;
      continue;
    }
    if (r.status === 'finished') t.finished++;
    else t.errors++;
    if (r.patch_bytes > 0) t.patches++;
    t.turns += r.turns;
    t.context_tokens += r.context_tokens;
    t.completion_tokens += r.completion_tokens;
    t.wall_sec += r.wall_sec;
    const reason = r.exit_reason ?? 'preflight_error';
    t.exit_reasons[reason] = (t.exit_reasons[reason] ?? 0) + 1;
  }
  t.wall_sec = Math.round(t.wall_sec * 10) / 10;
  return t;
}

/** eval-summary.json, made afresh from the records of every instance of the output's dataset; the grade is kept. */
export async function writeSummary(
  out: string,
  ids: string[],
  meta: Record<string, unknown>,
): Promise<{ totals: Totals; records: InstanceRecord[] }> {
  const records = new Map<string, InstanceRecord>();
  for (const id of ids) {
    const r = await readRecord(out, id);
    if (r) records.set(id, r);
  }
  const file = path.join(out, FILES.summary);
  const previous = await readSummary(out);
  const totals = totalsOf(ids, records);
  const list = ids.flatMap((id) => (records.has(id) ? [records.get(id)!] : []));
  await writeJsonAtomic(file, { ...previous, ...meta, totals, instances: list });
  return { totals, records: list };
}

export async function readSummary(out: string): Promise<Record<string, unknown>> {
  const text = await readBounded(path.join(out, FILES.summary));
  if (!text) return {};
  const v: unknown = JSON.parse(text);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
