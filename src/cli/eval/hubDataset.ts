/**
 * `--dataset owner/name`: a dataset on the Hugging Face Hub, read through the same file API as `frognano model pull`
 * (src/cli/model/hubFiles.ts: the repository's tree, `resolve/` downloads, HF_ENDPOINT and HF_TOKEN): the parquet
 * files of one split (`--split`, default test) are downloaded into a cache directory, each checked against the size
 * and checksum the tree lists, and then read by the same parquet reader as a local file. A machine without the Hub
 * uses what an earlier run cached (the manifest written after a complete download).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { CliError, setupError } from '../exitCodes.js';
import { downloadFile } from '../model/download.js';
import { hubRepoFromEnv, listHubFiles, safeRelativePath, type HubFile } from '../model/hubFiles.js';

export const DEFAULT_SPLIT = 'test';
const REVISION = 'main';
/** A split of more files than this is not a SWE-bench dataset (Verified's test split is one file). */
const MAX_SPLIT_FILES = 64;
const NAME = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;
const SPLIT = /^[A-Za-z0-9][\w.-]{0,99}$/;
const MANIFEST = 'frognano-files.json';

const ManifestSchema = z.object({ files: z.array(z.string().min(1).max(1000)).min(1).max(MAX_SPLIT_FILES) });

/** `--dataset` names a Hub dataset (owner/name) rather than a file: no file extension of a dataset file. */
export function isHubDatasetName(spec: string): boolean {
  return NAME.test(spec) && !/\.(jsonl|json|parquet)$/i.test(spec);
}

/** Where downloaded datasets are kept: $XDG_CACHE_HOME/frognano/datasets (default ~/.cache). */
export function datasetCacheDir(env: NodeJS.ProcessEnv, name: string): string {
  const base = env.XDG_CACHE_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.cache');
  return path.join(base, 'frognano', 'datasets', ...name.split('/'), REVISION);
}

/**
 * The split's parquet files as the Hub lays them out: `data/test-00000-of-00001.parquet` (SWE-bench's), a
 * `test/` folder, or `test.parquet`; in path order, so the instances keep the dataset's order.
 */
export function splitFiles(files: HubFile[], split: string): HubFile[] {
  const inSplit = (p: string) => {
    const parts = p.split('/');
    const base = parts.at(-1)!;
    return parts.slice(0, -1).includes(split) || base.startsWith(`${split}-`) || base === `${split}.parquet`;
  };
  return files
    .filter((f) => f.path.endsWith('.parquet') && inSplit(f.path))
    .sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * Downloads (or finds in the cache) the parquet files of `split` of the Hub dataset `name`; returns their paths.
 * `note` is told what happens (a download, the cache used offline).
 */
export async function fetchHubDataset(o: {
  name: string;
  split: string;
  env: NodeJS.ProcessEnv;
  note: (text: string) => void;
}): Promise<string[]> {
  if (!SPLIT.test(o.split)) throw setupError(`--split must be a plain name, got '${o.split.slice(0, 100)}'`);
  const hub = hubRepoFromEnv(o.env, o.name, REVISION, 'dataset');
  const dir = path.join(datasetCacheDir(o.env, o.name), o.split);
  let listed: HubFile[];
  try {
    listed = await listHubFiles(hub);
  } catch (err) {
    const cached = await cachedFiles(dir);
    if (cached) {
      o.note(`the Hub is not reachable (${(err as Error).message}); using ${o.name} [${o.split}] cached in ${dir}`);
      return cached;
    }
    const hint = err instanceof CliError ? err.hint : undefined;
    throw setupError(
      `cannot get the dataset ${o.name} from ${hub.endpoint}: ${(err as Error).message}`,
      hint ?? 'check the network, or set HF_ENDPOINT to a reachable mirror, or pass --dataset FILE',
    );
  }
  const files = splitFiles(listed, o.split);
  if (files.length === 0) {
    const splits = [...new Set(listed.filter((f) => f.path.endsWith('.parquet')).map((f) => f.path))].slice(0, 10);
    throw setupError(
      `the dataset ${o.name} has no parquet files for the split '${o.split}'`,
      splits.length ? `its parquet files: ${splits.join(', ')} (pass --split)` : 'it has no parquet files at all',
    );
  }
  if (files.length > MAX_SPLIT_FILES) throw setupError(`${o.name} [${o.split}] has more than ${MAX_SPLIT_FILES} files`);
  await mkdir(dir, { recursive: true });
  for (const f of files) {
    const got = await downloadFile(hub, f, dir, () => undefined);
    if (got === 'downloaded') o.note(`downloaded ${o.name}/${f.path} (${f.size} bytes) into ${dir}`);
  }
  await writeFile(path.join(dir, MANIFEST), JSON.stringify({ files: files.map((f) => f.path) }));
  return files.map((f) => path.join(dir, f.path));
}

/** The files of the last complete download into `dir`, or undefined. */
async function cachedFiles(dir: string): Promise<string[] | undefined> {
  try {
    const m = ManifestSchema.parse(JSON.parse(await readFile(path.join(dir, MANIFEST), 'utf8')));
    return m.files.map((f) => path.join(dir, safeRelativePath(f)));
  } catch {
    return undefined;
  }
}
