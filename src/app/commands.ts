import { paragraphLineStarts } from './paragraphLines.js';

/** `/frognano <word>` commands in issue comments. */
export type Command = { kind: 'retry' } | { kind: 'cancel' } | { kind: 'status' } | { kind: 'help'; unknown?: string };

const MAX_SCANNED_CHARS = 20_000;

/**
 * Finds the first paragraph line that starts with `/frognano`. Code (fenced or indented), HTML comments and
 * blocks, block quotes and list items are skipped by CommonMark's rules, so quoting someone's command in a
 * reply, or hiding one in a comment a reader cannot see, does not run it. Returns null when there is none.
 */
export function parseCommand(body: string | null | undefined): Command | null {
  if (!body) return null;
  for (const line of paragraphLineStarts(body.slice(0, MAX_SCANNED_CHARS))) {
    const m = /^\/frognano(?:\s+(\S+))?/i.exec(line);
    if (!m || (line.length > 9 && !/\s/.test(line[9]!))) continue; // `/frognanoX` is not ours
    const word = (m[1] ?? '').toLowerCase();
    if (word === 'retry' || word === 'cancel' || word === 'status') return { kind: word };
    if (word === '' || word === 'help') return { kind: 'help' };
    return { kind: 'help', unknown: m[1]!.slice(0, 50) };
  }
  return null;
}
