/**
 * `frognano eval --dataset owner/name`: the dataset's parquet files of a split, found in the Hub's tree listing
 * (a loopback stand-in for the Hub's API, as in modelPull.test.ts) and downloaded with their checksums into the
 * cache, read by the parquet reader; the cache used offline; a clear error when the Hub is not there.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promises as fs } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { loadDataset } from '../../src/cli/eval/dataset.js';
import { datasetCacheDir, fetchHubDataset, isHubDatasetName } from '../../src/cli/eval/hubDataset.js';
import { cleanEnv, runFrognano, tempDir } from './helpers.js';

const NAME = 'princeton-nlp/SWE-bench_Verified';
const TOKEN = 'hf_dataset_token';
const SHA = 'c'.repeat(40);
const row = (id: string) => ({
  instance_id: id,
  repo: 'o/r',
  base_commit: SHA,
  problem_statement: `Problem of ${id}\n`,
  FAIL_TO_PASS: '["t::a"]',
});
function parquetOf(rows: Record<string, string>[]): Buffer {
  const columns = Object.keys(rows[0]!).map((name) => ({
    name,
    data: rows.map((r) => r[name]),
    type: 'STRING' as const,
  }));
  return Buffer.from(parquetWriteBuffer({ columnData: columns }));
}
const FILES: Record<string, Buffer> = {
  'data/test-00000-of-00002.parquet': parquetOf([row('o__r-1'), row('o__r-2')]),
  'data/test-00001-of-00002.parquet': parquetOf([row('o__r-3')]),
  'data/dev-00000-of-00001.parquet': parquetOf([row('o__r-9')]),
};
const README = Buffer.from('# SWE-bench Verified\n');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const gitSha1 = (b: Buffer) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');

const state = { corrupt: false, requests: [] as string[] };

function hub(req: IncomingMessage, res: ServerResponse, base: string) {
  const url = new URL(req.url!, base);
  state.requests.push(url.pathname);
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return res.writeHead(401).end('{"error":"Invalid credentials"}');
  if (url.pathname === `/api/datasets/${NAME}/tree/main`) {
    const entries = [
      { type: 'file', path: 'README.md', size: README.length, oid: gitSha1(README) },
      { type: 'directory', path: 'data', oid: 'd'.repeat(40), size: 0 },
      ...Object.entries(FILES).map(([p, b]) => ({
        type: 'file',
        path: p,
        size: 130,
        oid: 'e'.repeat(40),
        lfs: { oid: sha256(b), size: b.length, pointerSize: 130 },
      })),
    ];
    return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entries));
  }
  const prefix = `/datasets/${NAME}/resolve/main/`;
  const body = url.pathname.startsWith(prefix) ? FILES[decodeURIComponent(url.pathname.slice(prefix.length))] : null;
  if (!body) return res.writeHead(404).end();
  const sent = state.corrupt ? Buffer.from(body).fill(0, 0, 4) : body;
  return res.writeHead(200, { 'content-length': sent.length }).end(sent);
}

let server: Server;
let endpoint: string;
let work: string;
beforeAll(async () => {
  work = await tempDir('eval-hub');
  server = createServer((req, res) => hub(req, res, endpoint));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await fs.rm(work, { recursive: true, force: true });
});

const envFor = (cache: string, hf = endpoint) => ({ HF_ENDPOINT: hf, HF_TOKEN: TOKEN, XDG_CACHE_HOME: cache });

describe('eval --dataset owner/name (the Hugging Face Hub)', () => {
  test('a name is told from a file', () => {
    expect(isHubDatasetName(NAME)).toBe(true);
    expect(isHubDatasetName('data/verified.parquet')).toBe(false);
    expect(isHubDatasetName('verified.jsonl')).toBe(false);
    expect(isHubDatasetName('../x/y')).toBe(false);
  });

  test("downloads the split's parquet files into the cache, checked, and reads them in order", async () => {
    const cache = path.join(work, 'c1');
    const notes: string[] = [];
    const files = await fetchHubDataset({ name: NAME, split: 'test', env: envFor(cache), note: (t) => notes.push(t) });
    const dir = path.join(datasetCacheDir(envFor(cache), NAME), 'test');
    expect(files).toEqual([
      path.join(dir, 'data/test-00000-of-00002.parquet'),
      path.join(dir, 'data/test-00001-of-00002.parquet'),
    ]);
    expect((await loadDataset(files)).map((i) => i.instance_id)).toEqual(['o__r-1', 'o__r-2', 'o__r-3']);
    expect(notes.filter((n) => n.startsWith('downloaded'))).toHaveLength(2);
    const dev = await fetchHubDataset({ name: NAME, split: 'dev', env: envFor(cache), note: () => undefined });
    expect((await loadDataset(dev)).map((i) => i.instance_id)).toEqual(['o__r-9']);
    // A second fetch checks what is there and downloads nothing.
    state.requests = [];
    await fetchHubDataset({ name: NAME, split: 'test', env: envFor(cache), note: () => undefined });
    expect(state.requests.filter((p) => p.includes('/resolve/'))).toEqual([]);
    // Offline, the cached split is used, and said so.
    const offline: string[] = [];
    const again = await fetchHubDataset({
      name: NAME,
      split: 'test',
      env: envFor(cache, 'http://127.0.0.1:1'),
      note: (t) => offline.push(t),
    });
    expect(again).toEqual(files);
    expect(offline.join('\n')).toMatch(/not reachable.*cached in/);
  });

  test('a file whose bytes differ from the listed sha256 is refused; an unknown split names the files there', async () => {
    const cache = path.join(work, 'c2');
    state.corrupt = true;
    try {
      await expect(
        fetchHubDataset({ name: NAME, split: 'test', env: envFor(cache), note: () => undefined }),
      ).rejects.toThrow(/sha256 checksum mismatch/);
    } finally {
      state.corrupt = false;
    }
    await expect(
      fetchHubDataset({ name: NAME, split: 'validation', env: envFor(cache), note: () => undefined }),
    ).rejects.toMatchObject({ message: expect.stringMatching(/no parquet files for the split 'validation'/) });
  });

  test('frognano eval: the Hub unreachable and nothing cached is a setup error naming the dataset and HF_ENDPOINT', async () => {
    const replay = path.join(work, 'replay.json');
    await fs.writeFile(replay, JSON.stringify({ turns: [] }));
    const env = cleanEnv(envFor(path.join(work, 'c3'), 'http://127.0.0.1:1'));
    const run = await runFrognano(['eval', '--dataset', NAME, '--out', path.join(work, 'o'), '--replay', replay], {
      env,
    });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`cannot get the dataset ${NAME} from http://127.0.0.1:1`);
    expect(run.stderr).toContain('HF_ENDPOINT');
    const split = await runFrognano(
      ['eval', '--dataset', path.join(work, 'replay.json'), '--split', 'dev', '--out', 'o', '--replay', replay],
      { env },
    );
    expect(split.code).toBe(2);
    expect(split.stderr).toContain('--split applies to a Hugging Face dataset name only');
  });
});
