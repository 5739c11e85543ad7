/** Cuts text to `max` characters, marking the cut with an ellipsis (for summaries and commit bodies). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
