/**
 * The GPU runner that `npm run runner` (main.ts) loads once `.env` is read and the settings are checked: loads the model once, registers the runner, reaps sandbox
 * containers a crashed predecessor left, and processes `frognano` jobs until SIGTERM/SIGINT.
 */
import { trajectoryStoreFromEnv } from '../src/runs/config.js';
import { publicUrlFromEnv } from '../src/runs/url.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import Docker from 'dockerode';
import type { Redis } from 'ioredis';
import { backendConfigFromEnv, createBackend, describeRetry } from '../src/inference/index.js';
import { createLogger } from '../src/ops/logger.js';
import { metrics } from '../src/ops/metrics.js';
import { redisCheck, startOpsServer, type OpsServer } from '../src/ops/http.js';
import { describeRunner, registerRunner } from '../src/ops/runnerRegistry.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { watchRedisState } from '../src/util/redisState.js';
import type { ModelBackend } from '../src/inference/types.js';
import { botKeyPrefix, setBotKeyPrefix } from '../src/queue/keys.js';
import { redisConfigFromEnv } from '../src/queue/redisConfig.js';
import { GitMirrorCache } from '../src/github/gitMirror.js';
import { SetupSnapshotCache } from '../src/leaf/setupSnapshot.js';
import { runnerConfigFromEnv, type RunnerConfig } from '../src/runner/config.js';
import { runnerVerifier } from '../src/runner/verifier.js';
import {
  checkRunnerSandbox,
  reapStaleSandboxes,
  sandboxConfigFromEnv,
  type SandboxConfig,
} from '../src/sandbox/index.js';
import { createRunnerWorker, type RunnerWorker } from './worker.js';

// Every line carries the real hostname: logs are the operator's (public texts use the runner's public name).
const log = createLogger({ name: 'runner', base: { hostname: os.hostname() } });

async function main(): Promise<void> {
  const cfg = runnerConfigFromEnv();
  const sandbox = sandboxConfigFromEnv();
  // Refuses the unisolated local sandbox unless explicitly allowed; says so loudly when it is.
  const unsafe = checkRunnerSandbox(sandbox);
  if (unsafe) log.warn(unsafe);
  await prepareDirectories(cfg);

  // REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES; commands wait through a failover (maxRetriesPerRequest: null).
  const redisConfig = redisConfigFromEnv();
  setBotKeyPrefix(redisConfig.keyPrefix);
  const redis = createRedisConnection(redisConfig.target);
  const bullConnection = createRedisConnection(redisConfig.target);
  const subscriber = createRedisConnection(redisConfig.target);
  // One line per change of state (down, retrying, back) for each, never one per failed reconnect.
  watchRedisState(redis, 'state', log);
  watchRedisState(bullConnection, 'worker', log);
  watchRedisState(subscriber, 'subscriber', log);

  log.info('loading the model backend');
  const backend = await loadBackend();
  const info = backend.info();
  const registration = await registerRunner({
    redis,
    prefix: botKeyPrefix(),
    model: info.model,
    backend: info.backend,
    name: cfg.runnerName,
    concurrency: cfg.concurrency,
    onError: (err) => log.warn({ err }, 'runner heartbeat failed'),
  });
  const runnerDescription = describeRunner(registration.info);

  await reapLeftoverSandboxes(sandbox);
  const ops = await startOps(cfg, redis);

  const runner = createRunnerWorker({
    connection: bullConnection,
    subscriber,
    prefix: redisConfig.queuePrefix,
    concurrency: cfg.concurrency,
    lockDurationMs: cfg.lockDurationMs,
    stalledIntervalMs: cfg.stalledIntervalMs,
    maxStalledCount: cfg.maxStalledCount,
    registration,
    ctx: {
      redis,
      app: { appId: cfg.appId, privateKey: cfg.privateKey, baseUrl: cfg.apiBaseUrl },
      gitBaseUrl: cfg.gitBaseUrl,
      backend,
      sandbox,
      workDir: cfg.workDir,
      trajectoryDir: cfg.trajectoryDir,
      gitCache: gitCacheFor(cfg),
      setupCache: setupCacheFor(cfg),
      identity: { name: cfg.botName, email: cfg.botEmail },
      runnerDescription,
      logger: log,
      maxTurns: cfg.maxTurns,
      wallTimeMs: cfg.wallTimeMinutes ? cfg.wallTimeMinutes * 60_000 : undefined,
      sampling: cfg.sampling,
      metrics,
      trajectoryStore: trajectoryStoreFromEnv(process.env),
      publicUrl: publicUrlFromEnv(process.env),
      verifyOff: cfg.verify === 'off',
      evalPullImages: cfg.evalPullImages === 'on',
      ...runnerVerifier(redis),
    },
  });
  // The log names the public name the issues and pull requests see, beside the hostname (in every line).
  const { name } = registration.info;
  log.info({ runner: runnerDescription, name, concurrency: cfg.concurrency, sandbox: sandbox.kind }, 'runner started');

  const connections = [redis, bullConnection, subscriber];
  const stop = stopOnSignal(cfg, { runner, registration, backend, ops, connections });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

function gitCacheFor(cfg: RunnerConfig): GitMirrorCache | undefined {
  if (!cfg.gitCacheDir || cfg.gitCacheGb <= 0) return undefined;
  return new GitMirrorCache({ dir: cfg.gitCacheDir, maxBytes: Math.round(cfg.gitCacheGb * 1024 ** 3) });
}

function setupCacheFor(cfg: RunnerConfig): SetupSnapshotCache | undefined {
  if (!cfg.setupCacheDir || cfg.setupCacheGb <= 0) return undefined;
  return new SetupSnapshotCache({
    dir: cfg.setupCacheDir,
    maxBytes: Math.round(cfg.setupCacheGb * 1024 ** 3),
    maxSnapshotBytes: Math.round(cfg.setupCacheMaxMb * 1024 ** 2),
  });
}

async function prepareDirectories(cfg: RunnerConfig): Promise<void> {
  // 0711: the sandbox user (bwrap/docker, uid 1000) must traverse it to reach its workspace, never list it.
  await fs.mkdir(cfg.workDir, { recursive: true, mode: 0o711 });
  // solve() copies each repository into a workspace under the OS temp dir. A docker sandbox bind-mounts that
  // workspace by its HOST path, so it must live in FROGNANO_WORK_DIR (mounted at the same path on both sides).
  if (!process.env.TMPDIR) process.env.TMPDIR = cfg.workDir;
  await fs.mkdir(cfg.trajectoryDir, { recursive: true });
}

function loadBackend(): Promise<ModelBackend> {
  return createBackend(backendConfigFromEnv(process.env), {
    onRetry: (retry) => log.warn({ retry: retry.retry, delayMs: retry.delayMs }, describeRetry(retry)),
    onWarning: (message) => log.warn(message),
    onDebug: (message) => log.debug(message),
  });
}

async function reapLeftoverSandboxes(sandbox: SandboxConfig): Promise<void> {
  if (sandbox.kind !== 'docker' && sandbox.kind !== 'auto') return;
  const { socketPath, jobTimeoutMs } = sandbox.kind === 'docker' ? sandbox : sandbox.docker;
  try {
    const removed = await reapStaleSandboxes(
      new Docker(socketPath ? { socketPath } : undefined),
      jobTimeoutMs ?? 2 * 60 * 60_000,
    );
    if (removed.length) log.info({ removed: removed.length }, 'removed stale sandbox containers');
  } catch (err) {
    // No Docker engine is fine for `auto` (bwrap is used); say so once.
    log.warn({ err: (err as Error).message }, 'could not look for stale sandbox containers');
  }
}

async function startOps(cfg: RunnerConfig, redis: Redis): Promise<OpsServer | undefined> {
  if (cfg.opsPort === undefined) return undefined;
  const ops = await startOpsServer({ port: cfg.opsPort, checks: [redisCheck(redis)], metrics });
  log.info({ port: ops.port }, 'ops server listening');
  return ops;
}

/** What a stopping runner closes, in this order. */
interface RunnerParts {
  runner: RunnerWorker;
  registration: { stop(): Promise<void> };
  backend: ModelBackend;
  ops?: OpsServer;
  connections: Redis[];
}

/** The signal handler: the first signal drains the runner within the grace period, a second one exits at once. */
function stopOnSignal(cfg: RunnerConfig, parts: RunnerParts): (signal: string) => Promise<void> {
  const { runner, registration, backend, ops } = parts;
  let stopping = false;
  return async (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again: exiting now; active jobs return to the queue when their locks expire`);
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, active: runner.activeJobs(), graceSeconds: cfg.shutdownGraceSeconds }, 'shutting down');
    try {
      await runner.shutdown(cfg.shutdownGraceSeconds * 1000);
      await registration.stop();
      await backend.close?.();
      await ops?.close();
      await Promise.all(parts.connections.map((c) => c.quit()));
      log.info('runner stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'unclean shutdown');
      process.exit(1);
    }
  };
}

main().catch((err: unknown) => {
  log.fatal({ err }, `runner could not start: ${(err as Error).message}`);
  process.exit(1);
});
