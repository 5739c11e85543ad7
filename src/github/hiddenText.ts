/**
 * Strips what GitHub does not render from comment text before it reaches the model: HTML comments
 * (a favourite place to hide instructions for bots) and zero-width / bidi control characters.
 * Placeholder until the app's neutralising module lands; callers use only this function.
 */
export function stripHiddenText(text: string): string {
  return text
    .replace(/<!--[\s\S]*?(-->|$)/g, '')
    .replace(/[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]/g, '')
    .trim();
}
