import type { Sandbox } from '../sandbox/types.js';
import { elideMiddle } from './text.js';
import type { LeafTask } from './trajectory.js';

/** Same content as the system prompt FrogNano was trained with: inspect, edit, run, validate, answer briefly. */
export const SYSTEM_PROMPT =
  'You are a software-engineering agent working in a checked-out repository.\n' +
  'Use the available tools to inspect files, make focused edits, and run commands.\n' +
  'Solve the task, validate when practical, then give a brief final answer.';

/** Issue bodies are untrusted and unbounded; this keeps one from eating the context window. */
export const MAX_ISSUE_BODY_CHARS = 30_000;
const MAX_TOP_LEVEL_ENTRIES = 200;

/** Top-level files and directories (`dir/`), so the model starts oriented without spending a turn. */
export async function topLevelEntries(sandbox: Sandbox): Promise<string[]> {
  const { files, truncated } = await sandbox.listFiles('.', 20_000);
  const entries = new Set<string>();
  for (const f of files) {
    const slash = f.path.indexOf('/');
    entries.add(slash === -1 ? f.path : `${f.path.slice(0, slash)}/`);
  }
  const list = [...entries].sort();
  if (truncated) list.push('…');
  return list;
}

export interface TaskContext {
  /** Where the repository is inside the sandbox (commands run there). */
  workdir: string;
  topLevel?: string[];
  /** Extra lines, e.g. a failed setup command. */
  notes?: string[];
}

/** The first user message: the issue, then what the model needs to know about its surroundings. */
export function renderTaskMessage(task: LeafTask, ctx: TaskContext): string {
  const heading = task.issueNumber !== undefined ? `Issue #${task.issueNumber}: ${task.title}` : task.title;
  const body = task.body.trim() ? elideMiddle(task.body.trim(), MAX_ISSUE_BODY_CHARS) : '(no description)';
  const lines = [`${task.repo ? `Repository: ${task.repo}\n` : ''}${heading}`, '', body, '', '---', ''];
  lines.push(`The repository is checked out at ${ctx.workdir} (the current directory for Bash). There is no network access.`);
  lines.push('Change the files in place; do not commit. Your changes are collected as a patch for review.');
  if (ctx.topLevel?.length) {
    const shown = ctx.topLevel.slice(0, MAX_TOP_LEVEL_ENTRIES);
    const more = ctx.topLevel.length > shown.length ? ` … (${ctx.topLevel.length - shown.length} more)` : '';
    lines.push('', `Top-level files: ${shown.join(', ')}${more}`);
  }
  if (ctx.notes?.length) lines.push('', ...ctx.notes);
  return lines.join('\n');
}
