/** Text helpers shared by the tools, the loop and the trajectory renderer. */

/** Keeps the start and the end (where errors and results usually are) and elides the middle. */
export function elideMiddle(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const marker = (n: number) => `\n… [${n} chars elided] …\n`;
  const room = Math.max(0, limit - marker(text.length).length);
  const head = Math.ceil(room / 2);
  const tail = room - head;
  const elided = text.length - head - tail;
  return `${text.slice(0, head)}${marker(elided)}${tail > 0 ? text.slice(text.length - tail) : ''}`;
}

/** Last `limit` characters, for command output tails. */
export function tail(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return `[${text.length - limit} earlier chars omitted]\n${text.slice(text.length - limit)}`;
}

/** One line, at most `max` characters, with an ellipsis when cut. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`;
}

/**
 * A Markdown code block its content cannot close early: the fence is longer than any backtick run inside
 * (at least three). Used for model and command output in pull requests and trajectory renders.
 */
export function codeFence(text: string, lang = ''): string {
  const longest = (text.match(/`+/g) ?? []).reduce((n, run) => Math.max(n, run.length), 0);
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${lang}\n${text}\n${ticks}`;
}
