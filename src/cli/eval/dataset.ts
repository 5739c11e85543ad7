import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { InstanceSchema, type Instance } from '../../eval/instance.js';
import { setupError } from '../exitCodes.js';

export { InstanceSchema, type Instance };

/** A dataset file larger than this is refused (SWE-bench Verified's 500 instances are a few MB). */
export const MAX_DATASET_BYTES = 256 * 1024 * 1024;
/** Instances in one dataset, at most. */
export const MAX_INSTANCES = 100_000;

/** JSON has no BigInt: parquet int64 columns come back as BigInt. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

async function rowsOf(file: string, data: Buffer): Promise<unknown[]> {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.parquet') {
    const { parquetReadObjects } = await import('hyparquet');
    const buffer = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
    return (await parquetReadObjects({ file: buffer })).map(plain);
  }
  const text = data.toString('utf8');
  if (ext === '.json') {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) throw new Error('a .json dataset must be an array of instances');
    return parsed;
  }
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch (err) {
        throw new Error(`line ${i + 1} is not JSON: ${(err as Error).message}`);
      }
    });
}

/** The rows of one dataset file, size and extension checked. */
async function readRows(file: string): Promise<unknown[]> {
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) throw setupError(`dataset ${file} does not exist or is not a file`);
  if (info.size > MAX_DATASET_BYTES) {
    throw setupError(`dataset ${file} is larger than ${MAX_DATASET_BYTES / 1024 / 1024} MB`);
  }
  if (!/\.(jsonl|json|parquet)$/i.test(file)) {
    throw setupError(`dataset ${file}: expected a .jsonl, .json or .parquet file`);
  }
  try {
    return await rowsOf(file, await readFile(file));
  } catch (err) {
    throw setupError(`cannot read dataset ${file}: ${(err as Error).message}`);
  }
}

/**
 * The instances of a .jsonl, .json or .parquet file (or of several, in order: a Hub dataset's split), each checked;
 * a bad one names its row and field.
 */
export async function loadDataset(files: string | string[]): Promise<Instance[]> {
  const list = typeof files === 'string' ? [files] : files;
  const label = list.length === 1 ? list[0]! : `${path.dirname(list[0] ?? '.')} (${list.length} files)`;
  const rows: unknown[] = [];
  for (const file of list) {
    rows.push(...(await readRows(file)));
    if (rows.length > MAX_INSTANCES) throw setupError(`dataset ${label} has more than ${MAX_INSTANCES} instances`);
  }
  const seen = new Set<string>();
  return rows.map((row, i) => {
    const r = InstanceSchema.safeParse(row);
    if (!r.success) {
      const why = r.error.issues.map((x) => `${x.path.join('.') || 'row'}: ${x.message}`).join('; ');
      throw setupError(`dataset ${label}, instance ${i + 1}: ${why}`);
    }
    if (seen.has(r.data.instance_id))
      throw setupError(`dataset ${label}: instance ${r.data.instance_id} appears twice`);
    seen.add(r.data.instance_id);
    return r.data;
  });
}

export interface Selection {
  ids?: string[];
  limit?: number;
  /** Shuffle with this seed before the limit (the same seed gives the same order on any machine). */
  shuffleSeed?: number;
}

/** --instances, then --shuffle --seed, then --limit. An id not in the dataset is an error, not a silent skip. */
export function selectInstances(all: Instance[], sel: Selection): Instance[] {
  let chosen = all;
  if (sel.ids) {
    const byId = new Map(all.map((i) => [i.instance_id, i]));
    const missing = sel.ids.filter((id) => !byId.has(id));
    if (missing.length) throw setupError(`not in the dataset: ${missing.slice(0, 10).join(', ')}`);
    chosen = [...new Set(sel.ids)].map((id) => byId.get(id)!);
  }
  if (sel.shuffleSeed !== undefined) chosen = seededShuffle(chosen, sel.shuffleSeed);
  return sel.limit !== undefined ? chosen.slice(0, sel.limit) : chosen;
}

/** Fisher–Yates with mulberry32: a fixed, documented order for a seed (not Python's; eval's own). */
export function seededShuffle<T>(items: T[], seed: number): T[] {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
