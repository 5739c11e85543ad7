/** Small text helpers shared by the progress line, the summaries and `replay`. */

/** 65_000 -> "1m05s", 3_725_000 -> "1h02m", 4_200 -> "4.2s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  // Under a minute in seconds alone ("23s", never "0m23s").
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** 950 -> "950", 12_345 -> "12.3k", 131_072 -> "131k". */
export function formatTokens(n: number): string {
  if (!Number.isFinite(n)) return '?';
  if (n < 1000) return String(Math.round(n));
  if (n < 100_000) return `${(n / 1000).toFixed(1)}k`;
  return `${Math.round(n / 1000)}k`;
}

export { oneLine } from '../leaf/text.js';

/** Keeps the head and tail of long text and says how much was left out. */
export function trimMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.ceil(maxChars * 0.6);
  const tail = maxChars - head;
  return `${text.slice(0, head)}\n[… ${text.length - maxChars} chars trimmed …]\n${text.slice(text.length - tail)}`;
}

/** Indents every line of a block. */
export function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((l) => prefix + l)
    .join('\n');
}
