import { elideMiddle } from './text.js';
import type { LeafTask } from './trajectory.js';

/** Upstream Leaf's SYSTEM_PROMPT (microsoft/FrogNano, frognano/harness/leaf/tools.py), verbatim. */
export const SYSTEM_PROMPT =
  'You are a software-engineering agent working in a checked-out repository.\n' +
  'Use the available tools to inspect files, make focused edits, and run commands.\n' +
  'Solve the task, validate when practical, then give a brief final answer.';

/** Issue bodies are untrusted and unbounded; this keeps one from eating the context budget (65,536 tokens). */
export const TASK_BODY_MAX_CHARS = 30_000;
/** Each added section (guidance, discussion, AGENTS.md, review feedback) is capped the same way. */
export const TASK_SECTION_MAX_CHARS = 20_000;

export interface TaskMessageContext {
  /** The commit the workspace was checked out at, as the instruction's `Base commit` line. */
  baseCommit?: string;
  /** Extra paragraphs after the sections, e.g. that a setup command failed. */
  notes?: string[];
}

/** SWE-bench's instance id form (`owner__repo-123`), which the instruction's last line carries. */
function instanceId(task: LeafTask): string | undefined {
  if (!task.repo) return undefined;
  const name = task.repo.replace('/', '__');
  return task.issueNumber !== undefined ? `${name}-${task.issueNumber}` : name;
}

/**
 * The first user message. Upstream Leaf sends the task's instruction verbatim; for SWE-bench Verified that is
 * Harbor's instruction.md: `# Task`, the problem statement (the issue's title, a newline, its body), `---`, then
 * the repository, base commit and instance id in bold-label lines. The bot's additions (a maintainer's guidance,
 * the discussion, AGENTS.md, review feedback; LeafTask.context) follow the issue text under their own headings.
 */
export function renderTaskMessage(task: LeafTask, ctx: TaskMessageContext = {}): string {
  const body = elideMiddle(task.body.trim(), TASK_BODY_MAX_CHARS);
  const statement = [task.title.trim(), body].filter(Boolean).join('\n');
  const parts = ['# Task', statement];
  for (const section of task.context ?? []) {
    const text = section.text.trim();
    if (text) parts.push(`## ${section.heading.trim()}\n\n${elideMiddle(text, TASK_SECTION_MAX_CHARS)}`);
  }
  for (const note of ctx.notes ?? []) if (note.trim()) parts.push(note.trim());
  const facts: string[] = [];
  if (task.repo) facts.push(`**Repo:** \`${task.repo}\``);
  if (ctx.baseCommit) facts.push(`**Base commit:** \`${ctx.baseCommit}\``);
  const id = instanceId(task);
  if (id) facts.push(`**Instance ID:** \`${id}\``);
  if (facts.length) parts.push('---', facts.join('\n'));
  return `${parts.join('\n\n')}\n`;
}
