import type { Redis } from 'ioredis';
import { z } from 'zod';
import { botKey } from './keys.js';

/**
 * What a runner's eval round leaves for `frognano eval --queue` (src/runner/evalRound.ts writes it, the CLI reads it):
 * the prediction in SWE-bench's format, the instance's record for eval-summary.json, and the trajectory, in Redis
 * under `<prefix>:eval-result:<jobId>` for a week. Never on GitHub.
 */

/** The CLI collects results within this long; a run resumed later runs the instance again. */
export const EVAL_RESULT_TTL_SECONDS = 7 * 24 * 3600;
/** One stored result, at most: the trajectory is left out first, then a patch this large is an error. */
export const MAX_EVAL_RESULT_BYTES = 32 * 1024 * 1024;

/** One line of predictions.jsonl: SWE-bench's official format. */
export const PredictionSchema = z.object({
  instance_id: z.string().min(1),
  model_name_or_path: z.string().min(1),
  model_patch: z.string(),
});
export type Prediction = z.infer<typeof PredictionSchema>;

/** One instance's outcome (instances/<id>/result.json); eval-summary.json is made from these. */
export const InstanceRecordSchema = z.object({
  instance_id: z.string(),
  repo: z.string(),
  image: z.string(),
  /** finished: a prediction was written (maybe an empty patch). error: it could not run; a later run tries again. */
  status: z.enum(['finished', 'error']),
  exit_reason: z.string().nullable(),
  error: z.string().nullable(),
  turns: z.number(),
  context_tokens: z.number(),
  completion_tokens: z.number(),
  wall_sec: z.number(),
  patch_bytes: z.number(),
  finished_at: z.string(),
});
export type InstanceRecord = z.infer<typeof InstanceRecordSchema>;

export const EvalResultSchema = z.object({
  record: InstanceRecordSchema,
  /** Absent when the instance could not run (the record says why): a later run tries it again. */
  prediction: PredictionSchema.optional(),
  /** trajectory.json's text (scrubbed of secrets); absent when it did not fit MAX_EVAL_RESULT_BYTES. */
  trajectory: z.string().optional(),
  /** Who ran it: the runner's description (which machine, which model). */
  runner: z.string().max(500),
});
export type EvalResult = z.infer<typeof EvalResultSchema>;

export function evalResultKey(jobId: string): string {
  return botKey('eval-result', jobId);
}

/** Stores a round's result; a trajectory that would pass the cap is left out, a patch that alone passes it is an error. */
export async function storeEvalResult(redis: Redis, jobId: string, result: EvalResult): Promise<EvalResult> {
  let stored = EvalResultSchema.parse(result);
  let text = JSON.stringify(stored);
  if (Buffer.byteLength(text) > MAX_EVAL_RESULT_BYTES && stored.trajectory !== undefined) {
    stored = { ...stored, trajectory: undefined };
    text = JSON.stringify(stored);
  }
  if (Buffer.byteLength(text) > MAX_EVAL_RESULT_BYTES) {
    const error = `the patch is larger than the ${MAX_EVAL_RESULT_BYTES / 1024 / 1024} MiB a queued result may hold`;
    const record = { ...stored.record, status: 'error' as const, error };
    stored = { record, runner: stored.runner };
    text = JSON.stringify(stored);
  }
  await redis.set(evalResultKey(jobId), text, 'EX', EVAL_RESULT_TTL_SECONDS);
  return stored;
}

/** The stored result of an eval job, or undefined (none yet, expired, or unreadable: the caller runs it again). */
export async function readEvalResult(redis: Redis, jobId: string): Promise<EvalResult | undefined> {
  const text = await redis.get(evalResultKey(jobId));
  if (text === null || text.length > MAX_EVAL_RESULT_BYTES * 2) return undefined;
  try {
    const r = EvalResultSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

export async function dropEvalResult(redis: Redis, jobId: string): Promise<void> {
  await redis.del(evalResultKey(jobId));
}
