/**
 * Links to a run's page (src/runs/url.ts builds them) as the bot's Markdown writes them. The URL comes from the
 * app's own setting, but it lands in text that GitHub renders: only http(s), and the characters that could end a
 * Markdown link or start markup are percent-encoded.
 */
export function safeRunUrl(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  return u
    .toString()
    .replace(/[()<>\s"'`|[\]]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** `[text](url)`, or the bare text when the URL is not one to link. `text` is the bot's own words. */
export function markdownLink(text: string, url: string | undefined): string {
  const safe = url ? safeRunUrl(url) : null;
  return safe ? `[${text}](${safe})` : text;
}

/** What a reader of the repository gets behind the link, said once wherever a run page is linked. */
export const RUN_PAGE_NOTE = 'sign in with GitHub; people who can read this repository only';
