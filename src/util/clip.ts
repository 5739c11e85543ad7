/** Cuts text to `max` characters, marking the cut with an ellipsis (for summaries and commit bodies). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Cuts text to `max` characters and says on a line of its own how many more there were (for quoted blocks). */
export function clipCounted(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… [${text.length - max} more characters]`;
}
