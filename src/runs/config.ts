import path from 'node:path';
import { LocalObjectStore } from './localObjectStore.js';
import type { ObjectStore } from './objectStore.js';
import { S3ObjectStore } from './s3ObjectStore.js';
import { DEFAULT_MAX_ROUND_BYTES, DEFAULT_RETENTION_DAYS, TrajectoryStore } from './trajectoryStore.js';

/** Where rounds go when nothing is configured: beside the app's other state, shared by app and runner. */
export const DEFAULT_STORE_DIR = '.frognano/runs';

/**
 * The trajectory store the environment describes (docs/trajectory-pages.md):
 *   FROGNANO_TRAJECTORY_STORE            `s3://bucket/prefix` or a directory (default .frognano/runs)
 *   FROGNANO_S3_ENDPOINT, FROGNANO_S3_REGION   for an S3-compatible server; credentials from the AWS SDK's chain
 *   FROGNANO_TRAJECTORY_RETENTION_DAYS   default 90
 *   FROGNANO_TRAJECTORY_MAX_BYTES        default 16 MiB per round
 */
export function trajectoryStoreFromEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): TrajectoryStore {
  return new TrajectoryStore(objectStoreFromEnv(env, cwd), {
    retentionDays: positive(
      env.FROGNANO_TRAJECTORY_RETENTION_DAYS,
      DEFAULT_RETENTION_DAYS,
      'FROGNANO_TRAJECTORY_RETENTION_DAYS',
    ),
    maxRoundBytes: positive(
      env.FROGNANO_TRAJECTORY_MAX_BYTES,
      DEFAULT_MAX_ROUND_BYTES,
      'FROGNANO_TRAJECTORY_MAX_BYTES',
    ),
  });
}

function objectStoreFromEnv(env: NodeJS.ProcessEnv, cwd: string): ObjectStore {
  const where = env.FROGNANO_TRAJECTORY_STORE?.trim() || DEFAULT_STORE_DIR;
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(where);
  if (!s3) return new LocalObjectStore(path.resolve(cwd, where));
  return new S3ObjectStore({
    bucket: s3[1]!,
    prefix: s3[2] || undefined,
    endpoint: env.FROGNANO_S3_ENDPOINT || undefined,
    region: env.FROGNANO_S3_REGION || env.AWS_REGION || undefined,
  });
}

function positive(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
}
