/**
 * `frognano model pull` against a loopback stand-in for the Hugging Face Hub's file API: the tree listing (paged
 * by Link), /resolve/ redirecting to a CDN path that honours Range, X-Linked-Etag, bearer tokens.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli/main.js';

const REPO = 'microsoft/FrogNano-4B-2609';
const TOKEN = 'hf_test_token';
const weights = randomBytes(3 * 1024 * 1024 + 17);
const config = Buffer.from('{"model_type":"qwen3_5"}\n');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const gitSha1 = (b: Buffer) => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
const FILES: Record<string, Buffer> = { 'config.json': config, 'model-00001-of-00001.safetensors': weights };

interface HubState {
  cutAfter?: number; // the CDN drops the connection after this many bytes of the weights, once
  corrupt?: boolean;
  ranges: string[];
  auth: (string | undefined)[];
}
const state: HubState = { ranges: [], auth: [] };

function tree(page: string | null, res: ServerResponse, base: string) {
  const entries =
    page === '2'
      ? [
          {
            type: 'file',
            path: 'model-00001-of-00001.safetensors',
            size: 134,
            oid: 'a'.repeat(40),
            lfs: { oid: sha256(weights), size: weights.length, pointerSize: 134 },
          },
        ]
      : [
          { type: 'directory', path: 'onnx', oid: 'b'.repeat(40), size: 0 },
          { type: 'file', path: 'config.json', size: config.length, oid: gitSha1(config) },
        ];
  if (page !== '2') res.setHeader('link', `<${base}/api/models/${REPO}/tree/main?recursive=true&cursor=2>; rel="next"`);
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(entries));
}

function cdn(name: string, req: IncomingMessage, res: ServerResponse) {
  let body = FILES[name]!;
  if (state.corrupt && name.endsWith('.safetensors')) body = Buffer.from(body).fill(0, 0, 10);
  const range = req.headers.range;
  state.ranges.push(`${name}:${range ?? ''}`);
  let start = 0;
  if (range) {
    start = Number(/^bytes=(\d+)-$/.exec(range)![1]);
    res.statusCode = 206;
    res.setHeader('content-range', `bytes ${start}-${body.length - 1}/${body.length}`);
  }
  res.setHeader('content-length', body.length - start);
  const cut = state.cutAfter;
  if (cut !== undefined && name.endsWith('.safetensors')) {
    state.cutAfter = undefined;
    res.write(body.subarray(start, start + cut), () => res.socket?.destroy());
    return;
  }
  res.end(body.subarray(start));
}

function hub(req: IncomingMessage, res: ServerResponse, base: string) {
  const url = new URL(req.url!, base);
  state.auth.push(req.headers.authorization);
  if (url.pathname.startsWith('/cdn/')) return cdn(decodeURIComponent(url.pathname.slice(5)), req, res);
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    res.statusCode = 401;
    return res.end('{"error":"Invalid credentials"}');
  }
  if (url.pathname === `/api/models/${REPO}/tree/main`) return tree(url.searchParams.get('cursor'), res, base);
  const prefix = `/${REPO}/resolve/main/`;
  if (url.pathname.startsWith(prefix)) {
    const name = decodeURIComponent(url.pathname.slice(prefix.length));
    if (!FILES[name]) return res.writeHead(404).end();
    res.setHeader('x-linked-etag', name.endsWith('.safetensors') ? `"${sha256(weights)}"` : `"${gitSha1(config)}"`);
    res.writeHead(302, { location: `/cdn/${encodeURIComponent(name)}` });
    return res.end();
  }
  res.writeHead(404).end();
}

let server: Server;
let endpoint: string;
let work: string;
beforeAll(async () => {
  server = createServer((req, res) => hub(req, res, endpoint));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
afterEach(async () => {
  Object.assign(state, { cutAfter: undefined, corrupt: false, ranges: [], auth: [] });
  if (work) await rm(work, { recursive: true, force: true });
});

async function pull(env: NodeJS.ProcessEnv, ...args: string[]) {
  work ??= '';
  if (!work) work = await mkdtemp(path.join(tmpdir(), 'frognano-pull-'));
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += c));
  stderr.on('data', (c) => (err += c));
  const code = await runCli(['model', 'pull', '--dir', 'm', ...args], { stdout, stderr, env, cwd: work });
  return { code, out, err };
}
const env = () => ({ HF_ENDPOINT: endpoint, HF_TOKEN: TOKEN });

describe('frognano model pull', () => {
  it('downloads every listed file (all pages) with the token, verifies it and says how to serve it', async () => {
    work = '';
    const r = await pull(env());
    expect(r.err).toContain(`Pulling ${REPO}@main from ${endpoint}: 2 files`);
    expect(r.code).toBe(0);
    expect(Buffer.compare(await readFile(path.join(work, 'm', 'model-00001-of-00001.safetensors')), weights)).toBe(0);
    expect(await readFile(path.join(work, 'm', 'config.json'), 'utf8')).toBe(config.toString());
    expect(r.err).toMatch(/model-00001-of-00001\.safetensors\s+100%\s+3\.0 MiB \/ 3\.0 MiB/);
    expect(r.out).toContain(`vllm serve ${path.join(work, 'm')}`);
    expect(state.auth.filter((a) => a === `Bearer ${TOKEN}`).length).toBeGreaterThanOrEqual(4);
    expect(await readdir(path.join(work, 'm'))).toEqual(['config.json', 'model-00001-of-00001.safetensors']);
  });

  it('resumes an interrupted download with a Range request and checks the whole file', async () => {
    work = '';
    state.cutAfter = 1024 * 1024;
    const first = await pull(env());
    expect(first.code).toBe(3);
    expect(first.err).toContain('run the same command again to resume');
    const part = path.join(work, 'm', 'model-00001-of-00001.safetensors.incomplete');
    const have = (await stat(part)).size;
    expect(have).toBeGreaterThan(0);
    state.ranges = [];
    const second = await pull(env());
    expect(second.code).toBe(0);
    expect(state.ranges).toContain(`model-00001-of-00001.safetensors:bytes=${have}-`);
    expect(second.err).toContain('1 file(s) were already there and checked');
    expect(Buffer.compare(await readFile(path.join(work, 'm', 'model-00001-of-00001.safetensors')), weights)).toBe(0);
  });

  it('refuses a file whose bytes do not match the listed sha256 and keeps nothing of it', async () => {
    work = '';
    state.corrupt = true;
    const r = await pull(env());
    expect(r.code).toBe(3);
    expect(r.err).toContain('model-00001-of-00001.safetensors: sha256 checksum mismatch');
    expect(await readdir(path.join(work, 'm'))).toEqual(['config.json']);
  });

  it('--onnx exports what it pulled: a typo in --dtype fails before any download, the export checks the directory', async () => {
    work = '';
    const typo = await pull(env(), '--onnx', 'm-onnx', '--dtype', 'q8');
    expect(typo.code).toBe(2);
    expect(typo.err).toContain("--dtype takes fp32, fp16, q4 (one or more), got 'q8'.");
    expect(state.auth).toEqual([]);
    const loose = await pull(env(), '--dtype', 'q4');
    expect(loose.code).toBe(2);
    expect(loose.err).toContain('--python, --dtype and --timeout go with --onnx DIR');
    // The stand-in's repository is weights and a bare config.json: pulled, then refused by the export's checks.
    const r = await pull(env(), '--onnx', 'm-onnx');
    expect(r.out).toContain(`Model weights in ${path.join(work, 'm')} (checksums verified).`);
    expect(r.code).toBe(3);
    expect(r.err).toContain(`${path.join(work, 'm')} cannot be exported:`);
    expect(r.err).toContain('config.json says model_type qwen3_5, architectures (none)');
    expect(r.err).toContain('no tokenizer.json');
    expect(r.out).not.toContain('vllm serve');
  });

  it('says to set HF_TOKEN when the Hub refuses, and names a bad HF_ENDPOINT', async () => {
    work = '';
    const r = await pull({ HF_ENDPOINT: endpoint });
    expect(r.code).toBe(3);
    expect(r.err).toContain('the Hub answered 401');
    expect(r.err).toContain('export HF_TOKEN=');
    const bad = await pull({ HF_ENDPOINT: 'ftp://x' });
    expect(bad.err).toContain('HF_ENDPOINT must be an http(s) URL');
  });
});
