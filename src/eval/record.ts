import { z } from 'zod';

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
