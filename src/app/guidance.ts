import { MAX_GUIDANCE_CHARS } from '../queue/schema.js';
import { paragraphLineStarts } from './paragraphLines.js';

/**
 * A maintainer's words for the next attempt: `/frognano retry <guidance>`, or `/frognano <guidance>` on an
 * issue. The guidance is the rest of the command line plus the lines after it (so a longer request can
 * follow on its own lines). One unknown word (`/frognano stauts`) stays a typo that gets the help text:
 * guidance is at least two words.
 */
const COMMAND = /^\/frognano(?:[ \t]+retry\b)?[ \t]*(.*)$/i;

export function guidanceFrom(body: string | null | undefined): string {
  const text = body ?? '';
  // The command line by the same CommonMark rules as parseCommand (not one quoted or in code)...
  const line = paragraphLineStarts(text.slice(0, 20_000)).find((l) => /^\/frognano(\s|$)/i.test(l));
  const m = line ? COMMAND.exec(line) : null;
  if (!line || !m) return '';
  // ...then the lines after it, which may carry a longer request.
  const at = text.split('\n').findIndex((l) => l.trim() === line.trim());
  const after =
    at >= 0
      ? text
          .split('\n')
          .slice(at + 1)
          .join('\n')
      : '';
  return `${m[1] ?? ''}\n${after}`.trim().slice(0, MAX_GUIDANCE_CHARS);
}

/** `/frognano <two or more words>` (not a known command) asks for an attempt with guidance. */
export function isGuidanceRequest(
  command: { kind: string; unknown?: string },
  body: string | null | undefined,
): boolean {
  if (command.kind !== 'help' || !command.unknown) return false;
  return guidanceFrom(body).split(/\s+/).filter(Boolean).length >= 2;
}
