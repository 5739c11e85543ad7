import { MAX_GUIDANCE_CHARS } from '../queue/schema.js';

/**
 * A maintainer's words for the next attempt: `/frognano retry <guidance>`, or `/frognano <guidance>` on an
 * issue. The guidance is the rest of the command line plus the lines after it (so a longer request can
 * follow on its own lines). One unknown word (`/frognano stauts`) stays a typo that gets the help text:
 * guidance is at least two words.
 */
const COMMAND_LINE = /^[ \t]{0,3}\/frognano(?:[ \t]+(retry)\b)?[ \t]*(.*)$/im;

export function guidanceFrom(body: string | null | undefined): string {
  const text = body ?? '';
  const m = COMMAND_LINE.exec(text);
  if (!m) return '';
  const after = text.slice(m.index + m[0].length);
  return `${m[2] ?? ''}${after}`.trim().slice(0, MAX_GUIDANCE_CHARS);
}

/** `/frognano <two or more words>` (not a known command) asks for an attempt with guidance. */
export function isGuidanceRequest(command: { kind: string; unknown?: string }, body: string | null | undefined): boolean {
  if (command.kind !== 'help' || !command.unknown) return false;
  return guidanceFrom(body).split(/\s+/).filter(Boolean).length >= 2;
}
