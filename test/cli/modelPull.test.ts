/**
 * `frognano model pull` against a loopback stand-in for the Hugging Face Hub's file API: the tree listing (paged
 * by Link), /resolve/ redirecting to a CDN path that honours Range, X-Linked-Etag, bearer tokens.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { vllmServeLines } from '../../src/cli/model/serving.js';
import { HubStandIn } from '../support/hubStandIn.js';
import { runCliInProcess } from './helpers.js';

const REPO = 'microsoft/FrogNano-4B-2609';
const TOKEN = 'hf_test_token';
const weights = randomBytes(3 * 1024 * 1024 + 17);
const config = Buffer.from('{"model_type":"qwen3_5"}\n');
const hub = new HubStandIn(REPO, { 'config.json': config, 'model-00001-of-00001.safetensors': weights }, TOKEN);
const state = hub.state;

let endpoint: string;
let work: string;
beforeAll(async () => {
  await hub.start();
  endpoint = hub.endpoint;
});
afterAll(() => hub.stop());
afterEach(async () => {
  hub.reset();
  if (work) await rm(work, { recursive: true, force: true });
});

async function pull(env: NodeJS.ProcessEnv, ...args: string[]) {
  work ??= '';
  if (!work) work = await mkdtemp(path.join(tmpdir(), 'frognano-pull-'));
  return runCliInProcess(['model', 'pull', '--dir', 'm', ...args], { env, cwd: work });
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
    // The hint is docs/inference.md's line (src/cli/model/serving.ts; the docs test compares the docs with it).
    expect(r.out).toContain(`Serve them (GPU):  ${vllmServeLines(path.join(work, 'm')).join('\n')}`);
    expect(r.out).toContain(`frognano model export ${path.join(work, 'm')} ${path.join(work, 'm')}-onnx`);
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
