import { randomUUID } from 'node:crypto';
import type { ChatMessage, ToolSpec } from '../inference/types.js';
import type { RecordedMessage } from './modelTurn.js';
import type { Sampling } from './sampling.js';
import type {
  ExitReason,
  LeafTask,
  StepFacts,
  Trajectory,
  TrajectoryMessage,
  TrajectoryStep,
} from './trajectoryFormat.js';

/**
 * What a run has recorded so far: one conversation (each message recorded once, in the shape the trajectory
 * stores and the shape the backends take), the steps with this project's facts about them, and the counts.
 */
export class RunRecord {
  private readonly conversation: RecordedMessage[] = [];
  readonly steps: TrajectoryStep[] = [];
  readonly facts: StepFacts[] = [];
  /** Model calls made, a failed one included (upstream's n_steps). */
  nSteps = 0;
  /** Tokens in context, upstream's accounting. */
  contextTokens = 0;
  totalCompletion = 0;
  finalMessage = '';
  error: string | null = null;

  record(message: RecordedMessage): void {
    this.conversation.push(message);
  }

  /** The conversation as the trajectory stores it. */
  get messages(): TrajectoryMessage[] {
    return this.conversation.map((m) => m.stored);
  }

  /** The conversation as the model is sent it. */
  get wire(): ChatMessage[] {
    return this.conversation.map((m) => m.wire);
  }

  addStep(step: TrajectoryStep, facts: StepFacts): void {
    this.steps.push(step);
    this.facts.push(facts);
  }
}

/** What the trajectory says about the run beyond its record. */
export interface RunDescription {
  task: LeafTask;
  instanceId?: string;
  sampling: Required<Sampling>;
  tools: ToolSpec[];
  startedAt: number;
  model: { backend: string; model: string };
  /** The context budget the run was held to (Infinity when neither the limit nor the model set one). */
  budget: number;
  /** The configured context limit, stored when the budget is not finite. */
  configuredContextTokens: number;
}

/** SWE-bench-style instance id (`owner__repo-12`), or `local`. */
function defaultInstanceId(task: LeafTask): string {
  if (!task.repo) return 'local';
  const name = task.repo.replace('/', '__');
  return task.issueNumber !== undefined ? `${name}-${task.issueNumber}` : name;
}

/** The run as upstream's trajectory document (keys in upstream's order); this project's facts under `frognano`. */
export function buildTrajectory(record: RunRecord, exitReason: ExitReason, run: RunDescription): Trajectory {
  const { sampling, budget } = run;
  return {
    trajectory_format: 'leaf-function-calling',
    trajectory_id: randomUUID().replace(/-/g, ''),
    instance_id: run.instanceId ?? defaultInstanceId(run.task),
    seed: sampling.seed,
    messages: record.messages,
    tools: run.tools,
    steps: record.steps,
    n_steps: record.nSteps,
    exit_reason: exitReason,
    error: record.error,
    final_message: record.finalMessage,
    context_tokens: record.contextTokens,
    elapsed_sec: (Date.now() - run.startedAt) / 1000,
    output_patch: '',
    partial: false,
    frognano: {
      task: run.task,
      model: run.model,
      sampling: { ...sampling },
      started_at: new Date(run.startedAt).toISOString(),
      total_completion_tokens: record.totalCompletion,
      context_budget: Number.isFinite(budget) ? budget : run.configuredContextTokens,
      steps: record.facts,
    },
  };
}
