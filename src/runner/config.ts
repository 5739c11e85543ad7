import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_BOT_IDENTITY, DEFAULT_GIT_BASE_URL } from '../github/git.js';
import { DEFAULT_REDIS_URL, queuePrefixFromEnv } from '../queue/connection.js';
import { samplingFromEnv, type Sampling } from '../leaf/sampling.js';

/** Runner settings from the environment; every value has a default except the GitHub App credentials. */
export const RunnerConfigSchema = z.object({
  appId: z.coerce.number().int().positive(),
  privateKey: z.string().includes('PRIVATE KEY', { message: 'is not a PEM private key' }),
  /** REST API base for GitHub Enterprise Server (`https://ghe.example/api/v3`); api.github.com otherwise. */
  apiBaseUrl: z.string().url().optional(),
  gitBaseUrl: z
    .string()
    .regex(/^(https?|file):\/\//, 'must start with https://, http:// or file://')
    .default(DEFAULT_GIT_BASE_URL),
  redisUrl: z.string().default(DEFAULT_REDIS_URL),
  queuePrefix: z.string().min(1).optional(),
  concurrency: z.coerce.number().int().min(1).max(64).default(1),
  workDir: z.string().default(path.join(os.tmpdir(), 'frognano-runner')),
  trajectoryDir: z.string().default(path.join(os.homedir(), '.frognano', 'trajectories')),
  /** Bare mirrors per installation and repository (docs/warm-starts.md); default: beside the work dir. */
  gitCacheDir: z.string().optional(),
  /** Disk budget of the git mirrors; 0 turns the mirror off (every round clones from the remote). */
  gitCacheGb: z.coerce.number().min(0).default(20),
  /** Set-up snapshots per installation and repository (docs/warm-starts.md); default: beside the work dir. */
  setupCacheDir: z.string().optional(),
  /** Disk budget of the set-up snapshots; 0 turns them off (every round runs its set-up). */
  setupCacheGb: z.coerce.number().min(0).default(20),
  /** Largest snapshot kept; a set-up that leaves more is not snapshotted (logged). */
  setupCacheMaxMb: z.coerce.number().min(1).default(2048),
  botName: z.string().min(1).default(DEFAULT_BOT_IDENTITY.name),
  botEmail: z.string().min(3).default(DEFAULT_BOT_IDENTITY.email),
  maxTurns: z.coerce.number().int().min(1).max(1000).optional(),
  wallTimeMinutes: z.coerce.number().positive().optional(),
  /** SIGTERM: wait this long for active jobs before handing them back to the queue. */
  shutdownGraceSeconds: z.coerce.number().nonnegative().default(60),
  lockDurationMs: z.coerce.number().int().min(5000).default(120_000),
  stalledIntervalMs: z.coerce.number().int().min(1000).default(60_000),
  maxStalledCount: z.coerce.number().int().min(0).default(2),
  opsPort: z.coerce.number().int().min(0).max(65535).optional(),
  /** The runner's name in public texts (status comment, pull request); default: a hash of the hostname. */
  runnerName: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'must be 1-63 letters, digits, dots, dashes or underscores')
    .optional(),
  /** Verification of every published change in fresh sandboxes (issue #26); `off` for runners that cannot afford it. */
  verify: z
    .string()
    .transform((v) => v.toLowerCase())
    .pipe(z.enum(['on', 'off'], { message: 'must be on or off' }))
    .default('on'),
  /** FROGNANO_EVAL_PULL_IMAGES: an eval round may pull its instance's image (off: a missing image is refused). */
  evalPullImages: z
    .string()
    .transform((v) => v.toLowerCase())
    .pipe(z.enum(['on', 'off'], { message: 'must be on or off' }))
    .default('off'),
});
export type RunnerConfig = z.infer<typeof RunnerConfigSchema> & {
  /** FROGNANO_TEMPERATURE, FROGNANO_TOP_P, FROGNANO_TOP_K, FROGNANO_MIN_P, FROGNANO_REPETITION_PENALTY, FROGNANO_SEED,
   * FROGNANO_ENABLE_THINKING, FROGNANO_PARALLEL_TOOL_CALLS: overrides of upstream Leaf's eval sampling. */
  sampling: Partial<Sampling>;
};

/**
 * APP_ID, PRIVATE_KEY (or PRIVATE_KEY_PATH), GHE_HOST / FROGNANO_GITHUB_API_URL, FROGNANO_GIT_BASE_URL, REDIS_URL,
 * FROGNANO_QUEUE_PREFIX, FROGNANO_CONCURRENCY, FROGNANO_WORK_DIR, FROGNANO_TRAJECTORY_DIR, FROGNANO_GIT_CACHE_DIR,
 * FROGNANO_GIT_CACHE_GB, FROGNANO_SETUP_CACHE_DIR, FROGNANO_SETUP_CACHE_GB, FROGNANO_SETUP_CACHE_MAX_MB, FROGNANO_BOT_NAME,
 * FROGNANO_BOT_EMAIL, FROGNANO_MAX_TURNS, FROGNANO_WALL_TIME_MINUTES, FROGNANO_SHUTDOWN_GRACE_SECONDS,
 * FROGNANO_LOCK_DURATION_MS, FROGNANO_STALLED_INTERVAL_MS, FROGNANO_MAX_STALLED_COUNT, FROGNANO_OPS_PORT,
 * FROGNANO_RUNNER_NAME, FROGNANO_VERIFY, FROGNANO_EVAL_PULL_IMAGES, and the
 * sampling overrides (see RunnerConfig.sampling).
 * Errors name the variable, never its value (it may be the private key).
 */
export function runnerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): RunnerConfig {
  const v = (name: string) => {
    const s = env[name]?.trim();
    return s ? s : undefined;
  };
  let privateKey = v('PRIVATE_KEY')?.replace(/\\n/g, '\n');
  const keyPath = v('PRIVATE_KEY_PATH');
  if (!privateKey && keyPath) {
    try {
      privateKey = readFileSync(keyPath, 'utf8');
    } catch (e) {
      throw new Error(
        `PRIVATE_KEY_PATH: cannot read ${keyPath}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
  }
  const ghe = v('GHE_HOST');
  const names: Record<string, string> = {
    appId: 'APP_ID',
    privateKey: keyPath ? 'PRIVATE_KEY_PATH' : 'PRIVATE_KEY',
    apiBaseUrl: 'FROGNANO_GITHUB_API_URL',
    gitBaseUrl: 'FROGNANO_GIT_BASE_URL',
    redisUrl: 'REDIS_URL',
    queuePrefix: 'FROGNANO_QUEUE_PREFIX',
    concurrency: 'FROGNANO_CONCURRENCY',
    workDir: 'FROGNANO_WORK_DIR',
    trajectoryDir: 'FROGNANO_TRAJECTORY_DIR',
    gitCacheDir: 'FROGNANO_GIT_CACHE_DIR',
    gitCacheGb: 'FROGNANO_GIT_CACHE_GB',
    setupCacheDir: 'FROGNANO_SETUP_CACHE_DIR',
    setupCacheGb: 'FROGNANO_SETUP_CACHE_GB',
    setupCacheMaxMb: 'FROGNANO_SETUP_CACHE_MAX_MB',
    botName: 'FROGNANO_BOT_NAME',
    botEmail: 'FROGNANO_BOT_EMAIL',
    maxTurns: 'FROGNANO_MAX_TURNS',
    wallTimeMinutes: 'FROGNANO_WALL_TIME_MINUTES',
    shutdownGraceSeconds: 'FROGNANO_SHUTDOWN_GRACE_SECONDS',
    lockDurationMs: 'FROGNANO_LOCK_DURATION_MS',
    stalledIntervalMs: 'FROGNANO_STALLED_INTERVAL_MS',
    maxStalledCount: 'FROGNANO_MAX_STALLED_COUNT',
    opsPort: 'FROGNANO_OPS_PORT',
    runnerName: 'FROGNANO_RUNNER_NAME',
    verify: 'FROGNANO_VERIFY',
    evalPullImages: 'FROGNANO_EVAL_PULL_IMAGES',
  };
  const input: Record<string, unknown> = {};
  for (const [key, envName] of Object.entries(names)) {
    if (key === 'privateKey') input[key] = privateKey;
    else if (key === 'apiBaseUrl') input[key] = v(envName) ?? (ghe ? `https://${ghe}/api/v3` : undefined);
    else if (key === 'gitBaseUrl') input[key] = v(envName) ?? (ghe ? `https://${ghe}` : undefined);
    else if (key === 'queuePrefix')
      input[key] = queuePrefixFromEnv(env); // the app reads it the same way
    else input[key] = v(envName);
  }
  const parsed = RunnerConfigSchema.safeParse(input);
  if (!parsed.success) {
    const msgs = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      const message = i.code === 'invalid_type' && input[key] === undefined ? 'is required' : i.message;
      return `${names[key] ?? key} ${message}`;
    });
    throw new Error(`runner configuration: ${msgs.join('; ')}`);
  }
  let sampling: Partial<Sampling>;
  try {
    sampling = samplingFromEnv(env);
  } catch (e) {
    throw new Error(`runner configuration: ${(e as Error).message}`);
  }
  const gitCacheDir = parsed.data.gitCacheDir ?? path.join(path.dirname(parsed.data.workDir), 'frognano-git-cache');
  const setupCacheDir =
    parsed.data.setupCacheDir ?? path.join(path.dirname(parsed.data.workDir), 'frognano-setup-cache');
  return { ...parsed.data, gitCacheDir, setupCacheDir, sampling };
}
