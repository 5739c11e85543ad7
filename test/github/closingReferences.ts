/**
 * What GitHub would read as "close this issue" in a commit message, PR title or body, as generously as its
 * documented forms allow: a closing keyword (any case, a whole word, optionally in Markdown emphasis and followed
 * by a colon), whitespace, then `#N`, `GH-N`, `owner/repo#N` or an issues or pull URL on any host (GitHub
 * Enterprise too). Tests assert that text the bot posts has none of these.
 */
const LIVE_CLOSING_REFERENCE = new RegExp(
  String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b[*_~\x60]*:?[*_~\x60]*\s*[*_~(<\[]*` +
    String.raw`(?:#\d+|GH-\d+|[\w.-]+\/[\w.-]+#\d+|https?:\/\/[^\s/]+\/[\w.-]+\/[\w.-]+\/(?:issues|pull)\/\d+)`,
  'gi',
);

export function liveClosingReferences(text: string): string[] {
  return text.match(LIVE_CLOSING_REFERENCE) ?? [];
}

/** The model's final message from issue #22: every reference form after a closing keyword. */
export const HOSTILE_FINAL_MESSAGE =
  'Fixed add(). Fixes #1, closes acme/widgets#2, resolves https://github.com/acme/widgets/issues/3 and fix: #4. ' +
  'Also RESOLVED GH-5, Closed: https://ghe.example.com/acme/widgets/pull/6 and **fixes** http://git.corp/a/b/issues/7.';
