import type { ToolCall } from '../inference/types.js';
import { oneLine } from './text.js';

/**
 * One line describing a call, for progress events and trajectory summaries. Apart from the tool executor, so the
 * Markdown renderer can use it without pulling in the sandbox machinery.
 */
export function summarizeToolCall(call: Pick<ToolCall, 'name' | 'arguments'>): string {
  const a = call.arguments ?? {};
  const pick = (k: string) =>
    typeof a[k] === 'string' ? (a[k] as string) : a[k] === undefined ? '' : JSON.stringify(a[k]);
  let s: string;
  switch (call.name) {
    case 'Read':
    case 'Write':
    case 'Edit':
      s = pick('file_path') || pick('path');
      break;
    case 'Glob':
      s = pick('pattern') + (a.path ? ` in ${pick('path')}` : '');
      break;
    case 'Bash':
      s = pick('command');
      break;
    default:
      s = JSON.stringify(a);
  }
  return oneLine(s, 120);
}
