import { z } from 'zod';
import type { ToolSpec } from '../inference/types.js';
import {
  EXIT_REASON_TEXT,
  redactDeep,
  TASK_SECTION_KINDS,
  type ExitReason,
  type FrognanoFacts,
  type Trajectory,
  type TrajectoryMessage,
} from './trajectoryFormat.js';

/**
 * The trajectory module's front door: the format (trajectoryFormat.ts), reading a file, storing one, and the
 * Markdown rendering (trajectoryMarkdown.ts, which builds on the format only, so the two do not import each other).
 */
export * from './trajectoryFormat.js';
export { renderTrajectoryMarkdown } from './trajectoryMarkdown.js';

const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const assistantSchema = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  tool_calls: z.array(toolCallSchema).optional(),
  reasoning_content: z.string().optional(),
});

const messageSchema = z.union([
  z.object({ role: z.enum(['system', 'user']), content: z.string() }),
  assistantSchema,
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
]);

const stepFactsSchema = z.object({
  finish_reason: z.enum(['stop', 'tool_calls', 'length', 'aborted']),
  prompt_tokens: z.number().nonnegative(),
  completion_tokens: z.number().nonnegative(),
  generate_ms: z.number().nonnegative(),
  tools_ms: z.number().nonnegative(),
  parse_errors: z.array(z.string()),
  observations: z.array(
    z.object({ tool_call_id: z.string(), is_error: z.boolean(), elapsed_ms: z.number().nonnegative() }),
  ),
});

const taskSchema = z.object({
  title: z.string(),
  body: z.string(),
  repo: z.string().optional(),
  issueNumber: z.number().int().positive().optional(),
  context: z
    .array(z.object({ heading: z.string(), text: z.string(), kind: z.enum(TASK_SECTION_KINDS).optional() }))
    .optional(),
});

/**
 * A trajectory file: upstream's fields, checked one by one so a reader (`frognano replay`) can say what is wrong
 * with a damaged or foreign file. `frognano` is optional, so upstream's own trajectories load too; unknown extra
 * keys are accepted (newer writers may add some) and dropped.
 */
export const TrajectoryFileSchema = z.object({
  trajectory_format: z.literal('leaf-function-calling'),
  trajectory_id: z.string(),
  instance_id: z.string(),
  seed: z.number().int(),
  messages: z.array(messageSchema),
  tools: z.array(z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }).passthrough()),
  steps: z.array(
    z.object({
      step: z.number().int().nonnegative(),
      assistant: assistantSchema,
      observations: z.array(z.object({ tool: z.string(), observation: z.string() })),
    }),
  ),
  n_steps: z.number().int().nonnegative(),
  // Every ExitReason, in EXIT_REASON_TEXT's order (the Record type makes that list complete); `unknown` is
  // upstream's placeholder for a run that never started a step.
  exit_reason: z.enum(['unknown', ...(Object.keys(EXIT_REASON_TEXT) as ExitReason[])]),
  error: z.string().nullable(),
  final_message: z.string(),
  context_tokens: z.number().nonnegative(),
  elapsed_sec: z.number().nonnegative(),
  output_patch: z.string(),
  partial: z.boolean(),
  frognano: z
    .object({
      task: taskSchema,
      model: z.object({ backend: z.string(), model: z.string() }),
      sampling: z.record(z.string(), z.union([z.number(), z.boolean()]).optional()),
      started_at: z.string(),
      total_completion_tokens: z.number().nonnegative(),
      context_budget: z.number().nonnegative(),
      steps: z.array(stepFactsSchema),
      test_results: z
        .array(
          z.object({
            command: z.string(),
            exit_code: z.number().int().nullable(),
            timed_out: z.boolean(),
            output_tail: z.string(),
            duration_ms: z.number().nonnegative(),
          }),
        )
        .optional(),
    })
    .optional(),
});

/** A validated file as a Trajectory; a file from upstream gets empty project facts. */
export function trajectoryFromFile(parsed: z.infer<typeof TrajectoryFileSchema>): Trajectory {
  const frognano: FrognanoFacts = parsed.frognano ?? {
    task: { title: parsed.instance_id, body: '' },
    model: { backend: 'unknown', model: 'unknown' },
    sampling: {},
    started_at: '',
    total_completion_tokens: 0,
    context_budget: 0,
    steps: [],
  };
  return {
    ...parsed,
    exit_reason: parsed.exit_reason as ExitReason,
    tools: parsed.tools as unknown as ToolSpec[],
    messages: parsed.messages as TrajectoryMessage[],
    frognano,
  };
}

/** The trajectory as stored: secrets scrubbed, pretty-printed. */
export function serializeTrajectory(t: Trajectory): string {
  return `${JSON.stringify(redactDeep(t), null, 2)}\n`;
}
