/** Model, tool and issue text is hostile: everything that reaches the page goes through here. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** 12,345 */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** 850 ms, 12.3 s, 4 min 05 s */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * Characters nobody sees (zero-width, bidi embeddings, overrides and isolates, the tag block): in a test name or a
 * repository's message they can make one text read as another, so the page shows where they are. The same set as
 * src/github/untrusted.ts, which this layer may not import.
 */
const INVISIBLE =
  /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]|\uDB40[\uDC00-\uDC7F]/g;

/** Whether the text holds a character escapeShown would mark (the warning banners of steps and hunks). */
export function hasInvisible(text: string): boolean {
  INVISIBLE.lastIndex = 0;
  const found = INVISIBLE.test(text);
  INVISIBLE.lastIndex = 0;
  return found;
}

/** escapeHtml, with every invisible character shown as its code point (`⟨U+202E⟩`). */
export function escapeShown(text: string): string {
  return escapeHtml(text).replace(INVISIBLE, (c) => {
    const hex = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return `<span class="invisible">⟨U+${hex}⟩</span>`;
  });
}
