import { z } from 'zod';

/**
 * One SWE-bench-format instance: the fields eval uses, checked; the rest (FAIL_TO_PASS, version, …) kept as they
 * are for the harness. The id names a directory of the output, so it is a plain name.
 */
export const InstanceSchema = z.looseObject({
  instance_id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/, 'instance_id must be a plain name (letters, digits, _ . -)'),
  repo: z.string().min(1).max(200),
  base_commit: z.string().regex(/^[0-9a-f]{40}$/, 'base_commit must be a 40-hex commit id'),
  problem_statement: z.string().min(1).max(1_000_000),
});
export type Instance = z.infer<typeof InstanceSchema>;
