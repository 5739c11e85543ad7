import { untrustedInline } from './untrusted.js';

/**
 * The requests the egress proxy refused a round's setup commands (src/sandbox/egress), as the status comment and
 * the pull request description show them: a maintainer reads what to add to `setup.network.allow`, or what a setup
 * command tried that it should not have. Host and command come from the repository (untrusted): neutralised.
 */
export interface BlockedNetworkRequest {
  host: string;
  port: number;
  /** `not on the allowlist`, `resolves to a private … address`, … (the proxy's words). */
  reason: string;
  /** Identical refusals counted, not repeated. */
  count: number;
  /** The setup command that made it. */
  command: string;
}

/** How many refusals the description lists; the rest are counted. */
export const BLOCKED_SHOWN = 20;

function target(b: BlockedNetworkRequest): string {
  return `${untrustedInline(b.host, 120)}:${b.port}`;
}

/** `## Blocked network requests`: the first BLOCKED_SHOWN, then how many more; nothing when there were none. */
export function blockedRequestsSection(list: BlockedNetworkRequest[] | undefined): string[] {
  if (!list?.length) return [];
  const out = [
    '## Blocked network requests',
    '',
    "_The setup commands' egress proxy refused these (`setup.network` in `.github/frognano.yml` lists what it admits)._",
    '',
  ];
  for (const b of list.slice(0, BLOCKED_SHOWN)) {
    const times = b.count > 1 ? ` (${b.count} times)` : '';
    out.push(`- ${target(b)}: ${untrustedInline(b.reason, 100)}${times}, from ${untrustedInline(b.command, 150)}`);
  }
  if (list.length > BLOCKED_SHOWN) out.push(`- … and ${list.length - BLOCKED_SHOWN} more`);
  out.push('');
  return out;
}

/** The status comment's one line: how many were refused, and the first. Undefined when there were none. */
export function blockedRequestsLine(list: BlockedNetworkRequest[] | undefined): string | undefined {
  if (!list?.length) return undefined;
  const first = list[0]!;
  const more = list.length > 1 ? ` and ${list.length - 1} more` : '';
  return (
    `🚧 The setup commands' network requests were blocked: ${target(first)} (${untrustedInline(first.reason, 100)})` +
    `${more}.`
  );
}
