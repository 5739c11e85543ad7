/**
 * GPU runner entry point (`npm run runner`): loads the model once, registers the runner, reaps sandbox
 * containers a crashed predecessor left, and processes `frognano` jobs until SIGTERM/SIGINT.
 */
import { promises as fs } from 'node:fs';
import Docker from 'dockerode';
import { backendConfigFromEnv, createBackend, describeRetry } from '../src/inference/index.js';
import { createLogger } from '../src/ops/logger.js';
import { metrics } from '../src/ops/metrics.js';
import { redisCheck, startOpsServer, type OpsServer } from '../src/ops/http.js';
import { describeRunner, registerRunner } from '../src/ops/runnerRegistry.js';
import { createRedisConnection } from '../src/queue/connection.js';
import { botKeyPrefix, setBotKeyPrefix } from '../src/queue/keys.js';
import { redisConfigFromEnv } from '../src/queue/redisConfig.js';
import { runnerConfigFromEnv } from '../src/runner/config.js';
import { checkRunnerSandbox, reapStaleSandboxes, sandboxConfigFromEnv } from '../src/sandbox/index.js';
import { createRunnerWorker } from './worker.js';

const log = createLogger({ name: 'runner' });

async function main(): Promise<void> {
  const cfg = runnerConfigFromEnv();
  const sandbox = sandboxConfigFromEnv();
  // Refuses the unisolated local sandbox unless explicitly allowed; says so loudly when it is.
  const unsafe = checkRunnerSandbox(sandbox);
  if (unsafe) log.warn(unsafe);
  // 0711: the sandbox user (bwrap/docker, uid 1000) must traverse it to reach its workspace, never list it.
  await fs.mkdir(cfg.workDir, { recursive: true, mode: 0o711 });
  // solve() copies each repository into a workspace under the OS temp dir. A docker sandbox bind-mounts that
  // workspace by its HOST path, so it must live in FROGNANO_WORK_DIR (mounted at the same path on both sides).
  if (!process.env.TMPDIR) process.env.TMPDIR = cfg.workDir;
  await fs.mkdir(cfg.trajectoryDir, { recursive: true });

  // REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES; commands wait through a failover (maxRetriesPerRequest: null).
  const redisConfig = redisConfigFromEnv();
  setBotKeyPrefix(redisConfig.keyPrefix);
  const redis = createRedisConnection(redisConfig.target);
  const bullConnection = createRedisConnection(redisConfig.target);
  const subscriber = createRedisConnection(redisConfig.target);

  log.info('loading the model backend');
  const backend = await createBackend(backendConfigFromEnv(process.env), {
    onRetry: (retry) => log.warn({ retry: retry.retry, delayMs: retry.delayMs }, describeRetry(retry)),
    onWarning: (message) => log.warn(message),
  });
  const info = backend.info();
  const registration = await registerRunner({
    redis,
    prefix: botKeyPrefix(),
    model: info.model,
    backend: info.backend,
    onError: (err) => log.warn({ err }, 'runner heartbeat failed'),
  });
  const runnerDescription = describeRunner(registration.info);

  if (sandbox.kind === 'docker' || sandbox.kind === 'auto') {
    const { socketPath, jobTimeoutMs } = sandbox.kind === 'docker' ? sandbox : sandbox.docker;
    try {
      const removed = await reapStaleSandboxes(new Docker(socketPath ? { socketPath } : undefined), jobTimeoutMs ?? 2 * 60 * 60_000);
      if (removed.length) log.info({ removed: removed.length }, 'removed stale sandbox containers');
    } catch (err) {
      // No Docker engine is fine for `auto` (bwrap is used); say so once.
      log.warn({ err: (err as Error).message }, 'could not look for stale sandbox containers');
    }
  }

  let ops: OpsServer | undefined;
  if (cfg.opsPort !== undefined) {
    ops = await startOpsServer({ port: cfg.opsPort, checks: [redisCheck(redis)], metrics });
    log.info({ port: ops.port }, 'ops server listening');
  }

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
      identity: { name: cfg.botName, email: cfg.botEmail },
      runnerDescription,
      logger: log,
      maxTurns: cfg.maxTurns,
      wallTimeMs: cfg.wallTimeMinutes ? cfg.wallTimeMinutes * 60_000 : undefined,
      sampling: cfg.sampling,
      metrics,
    },
  });
  log.info({ runner: runnerDescription, concurrency: cfg.concurrency, sandbox: sandbox.kind }, 'runner started');

  let stopping = false;
  const stop = async (signal: string) => {
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
      await Promise.all([redis.quit(), bullConnection.quit(), subscriber.quit()]);
      log.info('runner stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'unclean shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  log.fatal({ err }, `runner could not start: ${(err as Error).message}`);
  process.exit(1);
});
