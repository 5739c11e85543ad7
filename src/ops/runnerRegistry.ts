/**
 * Runners announce themselves in Redis so the app (status comments, `/frognano status`) and operators
 * can see which machine, GPU and model is working on an issue.
 *
 * Layout (prefix default `frognano`):
 *   `<prefix>:runner:<id>`  hash of RunnerInfo fields, expires unless the runner's heartbeat renews it
 *   `<prefix>:runners`      set of ids, pruned of expired ones when listed
 * A runner that dies without saying goodbye disappears after `ttlSeconds`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import os from 'node:os';
import type { Redis } from 'ioredis';
import { packageInfo } from '../util/packageInfo.js';

export interface RunnerInfo {
  id: string;
  /** The machine's real name: for the operator (Redis entry, logs, `frognano doctor`), never for public texts. */
  hostname: string;
  /** What public texts (status comment, pull request) call this runner: FROGNANO_RUNNER_NAME or publicRunnerName. */
  name: string;
  /** Model name as the backend reports it (e.g. FrogNano-4B). */
  model: string;
  /** `onnx`, `openai`, `replay`. */
  backend: string;
  /** GPU name (`NVIDIA H200`, `2x NVIDIA H200`) or `cpu`. */
  gpu: string;
  /** Total memory of the first GPU in MiB, when known. */
  gpuMemoryMiB?: number;
  /** Jobs it runs at once (FROGNANO_CONCURRENCY): the model slots it brings to the fair share's dispatcher. */
  concurrency: number;
  /** frognano-bot version (package.json). */
  version: string;
  pid: number;
  startedAt: string;
  lastSeenAt: string;
  /** Job id the runner works on now, if any. */
  currentJob?: string;
}

export interface GpuInfo {
  gpu: string;
  gpuMemoryMiB?: number;
}

const DEFAULT_PREFIX = 'frognano';
const DEFAULT_TTL_SECONDS = 60;

const runnerKey = (prefix: string, id: string) => `${prefix}:runner:${id}`;
const setKey = (prefix: string) => `${prefix}:runners`;

/**
 * Asks `nvidia-smi` for the GPUs. No nvidia-smi (or it fails: no driver, no device) means `cpu`;
 * the onnx backend then runs on the CPU provider, so that is the truth to report.
 */
export function detectGpu(opts: { command?: string; timeoutMs?: number } = {}): Promise<GpuInfo> {
  const command = opts.command ?? 'nvidia-smi';
  return new Promise((resolve) => {
    execFile(
      command,
      ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'],
      { timeout: opts.timeoutMs ?? 5000, maxBuffer: 64 * 1024 },
      (err, stdout) => {
        if (err) return resolve({ gpu: 'cpu' });
        resolve(parseNvidiaSmi(stdout));
      },
    );
  });
}

/** `NVIDIA H200, 143771` per line (csv, noheader, nounits; `MiB` suffixes tolerated) -> `{ gpu, gpuMemoryMiB }`. */
export function parseNvidiaSmi(stdout: string): GpuInfo {
  const gpus = stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((line) => {
      const cut = line.lastIndexOf(',');
      const name = (cut >= 0 ? line.slice(0, cut) : line).trim();
      const mem =
        cut >= 0
          ? Number.parseInt(
              line
                .slice(cut + 1)
                .replace(/MiB/i, '')
                .trim(),
              10,
            )
          : Number.NaN;
      return { name, mem: Number.isFinite(mem) ? mem : undefined };
    })
    .filter((g) => g.name.length > 0);
  if (gpus.length === 0) return { gpu: 'cpu' };
  const first = gpus[0];
  const same = gpus.every((g) => g.name === first.name);
  const gpu =
    gpus.length === 1 ? first.name : same ? `${gpus.length}x ${first.name}` : gpus.map((g) => g.name).join(' + ');
  return first.mem === undefined ? { gpu } : { gpu, gpuMemoryMiB: first.mem };
}

export interface RegisterRunnerOptions {
  redis: Redis;
  model: string;
  backend: string;
  /** Detected with nvidia-smi when absent. */
  gpu?: GpuInfo;
  id?: string;
  hostname?: string;
  /** The public name (FROGNANO_RUNNER_NAME); default publicRunnerName(hostname). */
  name?: string;
  /** Jobs at once (default 1). */
  concurrency?: number;
  version?: string;
  prefix?: string;
  /** The entry expires this long after the last heartbeat. Default 60 s. */
  ttlSeconds?: number;
  /** Default a third of the TTL, so two missed beats are survivable. */
  heartbeatMs?: number;
  /** Heartbeat failures (Redis away); the runner keeps beating and recovers when Redis returns. */
  onError?: (err: unknown) => void;
}

export interface RunnerRegistration {
  readonly info: RunnerInfo;
  /** Renews the entry now (also done on a timer). */
  heartbeat(): Promise<void>;
  /** Records the job being worked on (null when idle). */
  setCurrentJob(jobId: string | null): Promise<void>;
  /** Stops the heartbeat and removes the entry. */
  stop(): Promise<void>;
}

function toHash(info: RunnerInfo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(info)) if (v !== undefined && v !== null) out[k] = String(v);
  return out;
}

function fromHash(h: Record<string, string>): RunnerInfo | null {
  if (!h.id || !h.hostname) return null;
  return {
    id: h.id,
    hostname: h.hostname,
    name: h.name || publicRunnerName(h.hostname),
    model: h.model ?? 'unknown',
    backend: h.backend ?? 'unknown',
    gpu: h.gpu ?? 'cpu',
    gpuMemoryMiB: h.gpuMemoryMiB ? Number(h.gpuMemoryMiB) : undefined,
    concurrency: Math.max(1, Number.parseInt(h.concurrency ?? '1', 10) || 1),
    version: h.version ?? 'unknown',
    pid: Number(h.pid ?? 0),
    startedAt: h.startedAt ?? '',
    lastSeenAt: h.lastSeenAt ?? '',
    currentJob: h.currentJob || undefined,
  };
}

export async function registerRunner(opts: RegisterRunnerOptions): Promise<RunnerRegistration> {
  const prefix = opts.prefix ?? DEFAULT_PREFIX;
  const ttl = opts.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  const hostname = opts.hostname ?? os.hostname();
  const gpu = opts.gpu ?? (await detectGpu());
  const now = new Date().toISOString();
  const info: RunnerInfo = {
    id: opts.id ?? `${hostname}-${process.pid}`,
    hostname,
    name: opts.name ?? publicRunnerName(hostname),
    model: opts.model,
    backend: opts.backend,
    gpu: gpu.gpu,
    gpuMemoryMiB: gpu.gpuMemoryMiB,
    concurrency: opts.concurrency ?? 1,
    version: opts.version ?? packageInfo().version,
    pid: process.pid,
    startedAt: now,
    lastSeenAt: now,
  };
  const key = runnerKey(prefix, info.id);
  const redis = opts.redis;

  const write = async (): Promise<void> => {
    info.lastSeenAt = new Date().toISOString();
    await redis.multi().hset(key, toHash(info)).expire(key, ttl).sadd(setKey(prefix), info.id).exec();
  };
  await write();

  let stopped = false;
  const timer = setInterval(
    () => {
      write().catch((err: unknown) => opts.onError?.(err));
    },
    opts.heartbeatMs ?? Math.max(1000, Math.floor((ttl * 1000) / 3)),
  );
  timer.unref(); // the heartbeat alone must not keep a finished process running

  return {
    info,
    heartbeat: write,
    async setCurrentJob(jobId) {
      if (jobId) info.currentJob = jobId;
      else delete info.currentJob;
      if (stopped) return;
      if (jobId) await write();
      else await redis.multi().hdel(key, 'currentJob').expire(key, ttl).exec();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await redis.multi().del(key).srem(setKey(prefix), info.id).exec();
    },
  };
}

/** Runners whose heartbeat is current, sorted by hostname; ids whose entry expired are pruned from the set. */
export async function listRunners(redis: Redis, opts: { prefix?: string } = {}): Promise<RunnerInfo[]> {
  const prefix = opts.prefix ?? DEFAULT_PREFIX;
  const ids = await redis.smembers(setKey(prefix));
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(runnerKey(prefix, id));
  const replies = (await pipeline.exec()) ?? [];
  const runners: RunnerInfo[] = [];
  const gone: string[] = [];
  replies.forEach(([err, hash], i) => {
    const info = err ? null : fromHash((hash ?? {}) as Record<string, string>);
    if (info) runners.push(info);
    else if (!err) gone.push(ids[i]);
  });
  if (gone.length > 0) await redis.srem(setKey(prefix), ...gone);
  return runners.sort((a, b) => a.hostname.localeCompare(b.hostname) || a.id.localeCompare(b.id));
}

/**
 * A name for public texts that does not publish the operator's host names: `runner-` and the first six hex digits
 * of the hostname's SHA-256 (stable per machine, so a maintainer can tell runs of one runner apart).
 */
export function publicRunnerName(hostname: string): string {
  return `runner-${createHash('sha256').update(hostname).digest('hex').slice(0, 6)}`;
}

/**
 * One line for the status comment and the pull request, under the runner's public name:
 * `gpu-east-1 (NVIDIA H200, FrogNano-4B via onnx, v0.1.0)`. Never the hostname (see RunnerInfo.hostname).
 */
export function describeRunner(info: Pick<RunnerInfo, 'name' | 'gpu' | 'model' | 'backend' | 'version'>): string {
  const version = /^\d/.test(info.version) ? `v${info.version}` : info.version;
  const gpu = info.gpu === 'cpu' ? 'CPU' : info.gpu;
  return `${info.name} (${gpu}, ${info.model} via ${info.backend}, ${version})`;
}
