import { pyDedent, pyStrip } from './pyText.js';
import { elideMiddle } from './text.js';
import type { LeafTask, TaskSection, TaskSectionKind } from './trajectory.js';

/** Upstream Leaf's SYSTEM_PROMPT (microsoft/FrogNano, frognano/harness/leaf/tools.py), verbatim. */
export const SYSTEM_PROMPT =
  'You are a software-engineering agent working in a checked-out repository.\n' +
  'Use the available tools to inspect files, make focused edits, and run commands.\n' +
  'Solve the task, validate when practical, then give a brief final answer.';

/**
 * Issue bodies are untrusted and unbounded; this keeps one from eating the context budget (65,536 tokens). The one
 * place the first message may differ from upstream's instruction: a longer body loses its middle.
 */
export const TASK_BODY_MAX_CHARS = 30_000;
/** Each added section (guidance, discussion, AGENTS.md, review feedback) is capped the same way. */
export const TASK_SECTION_MAX_CHARS = 20_000;

export interface TaskMessageContext {
  /** Paragraphs from the run itself, e.g. that a setup command failed; the last part of the bot's additions. */
  notes?: string[];
}

/**
 * The order of the bot's additions, fixed here whatever order the task lists them in: what the maintainer asked
 * for this run, what was said on the issue, the repository's standing instructions, then what a later round
 * answers (review feedback, failing checks). Sections without a kind follow, in their given order; notes come last.
 */
export const TASK_SECTION_ORDER: readonly TaskSectionKind[] = [
  'guidance',
  'discussion',
  'instructions',
  'feedback',
  'ci',
];

/** Separates the problem statement from the bot's additions; nothing in upstream's instruction looks like it. */
export const ADDITIONS_HEADER = '---\n\n# Additional context from frognano-bot';
export const NOTES_HEADING = 'Notes from this run';

/** The problem statement as Harbor's SWE-bench adapter wrote instruction.md: dedent(title\nbody).strip() + "\n". */
export function problemStatement(task: Pick<LeafTask, 'title' | 'body'>): string {
  const body = elideMiddle(task.body, TASK_BODY_MAX_CHARS);
  return `${pyStrip(pyDedent(`${task.title}\n${body}\n`))}\n`;
}

function sectionRank(section: TaskSection): number {
  const rank = section.kind ? TASK_SECTION_ORDER.indexOf(section.kind) : -1;
  return rank === -1 ? TASK_SECTION_ORDER.length : rank;
}

/** The `## heading` blocks of the bot's additions, in TASK_SECTION_ORDER (a stable sort keeps ties as given). */
function additionBlocks(sections: TaskSection[], notes: string[]): string[] {
  const ordered = [...sections].sort((a, b) => sectionRank(a) - sectionRank(b));
  const blocks: string[] = [];
  for (const section of ordered) {
    const text = pyStrip(section.text);
    if (text) blocks.push(`## ${pyStrip(section.heading)}\n\n${elideMiddle(text, TASK_SECTION_MAX_CHARS)}`);
  }
  const noteText = notes.map(pyStrip).filter(Boolean);
  if (noteText.length) blocks.push(`## ${NOTES_HEADING}\n\n${noteText.join('\n\n')}`);
  return blocks;
}

/**
 * The first user message. Upstream Leaf sends the task's instruction unchanged; for SWE-bench Verified that is
 * Harbor's instruction.md, the problem statement alone (see problemStatement). An issue with nothing else to say
 * is sent exactly so. The bot's additions (LeafTask.context, then the run's notes) follow it in one delimited part,
 * under ADDITIONS_HEADER with a `##` heading each. docs/task-message.md says why each part exists.
 */
export function renderTaskMessage(task: LeafTask, ctx: TaskMessageContext = {}): string {
  const statement = problemStatement(task);
  const blocks = additionBlocks(task.context ?? [], ctx.notes ?? []);
  if (!blocks.length) return statement;
  return `${statement}\n${[ADDITIONS_HEADER, ...blocks].join('\n\n')}\n`;
}
