import { z } from 'zod';

/**
 * The stored shape of a verification side (types.ts VerifySide), for what is read back: the base-result cache
 * (src/verify/cache.ts) and the stored verdict (outcome.ts). What another version wrote may not parse: a miss.
 */

export const TestStatusSchema = z.enum(['passed', 'failed', 'error', 'skipped']);
const TestCaseSchema = z.object({
  id: z.string(),
  status: TestStatusSchema,
  file: z.string().optional(),
  line: z.number().optional(),
  message: z.string().optional(),
});
const CommandRunSchema = z.object({
  command: z.string(),
  exitCode: z.number().nullable(),
  timedOut: z.boolean(),
  durationMs: z.number(),
  outputTail: z.string(),
  tests: z.array(TestCaseSchema),
  source: z.string(),
  notRun: z.string().optional(),
});
export const VerifySideSchema = z.object({
  commit: z.string(),
  setup: z.array(CommandRunSchema),
  tests: z.array(CommandRunSchema),
  cached: z.boolean().optional(),
  setupReused: z.boolean().optional(),
  notRun: z.string().optional(),
});
