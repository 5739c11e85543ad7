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

/** Text in a <pre>, folded into <details> when long, with its first line as the summary. */
export function foldedPre(
  text: string,
  o: { label: string; cls?: string; maxLines?: number; maxChars?: number },
): string {
  const lines = text.split('\n');
  const maxLines = o.maxLines ?? 30;
  const pre = `<pre class="${o.cls ?? 'out'}">${escapeHtml(text)}</pre>`;
  if (lines.length <= maxLines && text.length <= (o.maxChars ?? 3000)) return pre;
  const first = escapeHtml((lines.find((l) => l.trim()) ?? '').slice(0, 120));
  return `<details class="fold"><summary>${escapeHtml(o.label)} · ${formatCount(lines.length)} lines · <code>${first}</code></summary>${pre}</details>`;
}
