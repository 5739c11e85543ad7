/** `/frognano <word>` commands in issue comments. */
export type Command =
  | { kind: 'retry' }
  | { kind: 'cancel' }
  | { kind: 'status' }
  | { kind: 'help'; unknown?: string };

const MAX_SCANNED_CHARS = 20_000;

/**
 * Finds the first line that starts with `/frognano` outside quotes and code blocks, so quoting
 * someone's command in a reply does not run it again. Returns null when the comment has no command.
 */
export function parseCommand(body: string | null | undefined): Command | null {
  if (!body) return null;
  let inFence = false;
  for (const rawLine of body.slice(0, MAX_SCANNED_CHARS).split(/\r?\n/)) {
    const line = rawLine.trim();
    if (/^(```|~~~)/.test(line)) {
      inFence = !inFence;
      continue;
    }
    if (inFence || line.startsWith('>')) continue;
    const m = /^\/frognano(?:\s+(\S+))?/i.exec(line);
    if (!m || (line.length > 9 && !/\s/.test(line[9]!))) continue; // `/frognanoX` is not ours
    const word = (m[1] ?? '').toLowerCase();
    if (word === 'retry' || word === 'cancel' || word === 'status') return { kind: word };
    if (word === '' || word === 'help') return { kind: 'help' };
    return { kind: 'help', unknown: m[1]!.slice(0, 50) };
  }
  return null;
}
