/** Every reply the app posts on an issue or on the bot's pull request, in one place so the wording stays consistent. */

export function helpText(label: string, unknown?: string): string {
  const intro = unknown
    ? `I don't know the command \`/frognano ${sanitizeWord(unknown)}\`. Here is what I understand:`
    : 'Here is what I understand:';
  return [
    intro,
    '',
    '| Command | What it does |',
    '| --- | --- |',
    `| add the \`${label}\` label | queue a first attempt at this issue |`,
    '| `/frognano retry` | start a new attempt (after the previous one finished, failed or was cancelled); words after it are added to the task |',
    '| `/frognano <what to do>` | start an attempt with your words added to the task (when none is queued or running) |',
    "| `/frognano <what to change>` on frognano's pull request | another round on that pull request; a review containing `/frognano` does the same, with its inline comments. Asks made while a round runs wait and are merged into the next round |",
    "| `/frognano cancel` | withdraw a queued attempt, or stop a running one (on frognano's pull request it also drops the asks waiting for the next round) |",
    '| `/frognano status` | refresh the status comment and tell you where things stand |',
    '',
    'Commands work for people with write, maintain or admin access to this repository. Each attempt ends in a **draft** pull request that a human must review.',
  ].join('\n');
}

function sanitizeWord(w: string): string {
  return w.replace(/[`<>]/g, '');
}

export function refusalText(user: string, role: string, what: 'command' | 'label', label: string): string {
  const roleText = role === 'none' || role === 'unknown' ? 'no write access' : `the ${role} role`;
  const action =
    what === 'label'
      ? `Adding the \`${label}\` label starts a model run, so it needs write, maintain or admin access`
      : 'frognano commands start or stop model runs, so they need write, maintain or admin access';
  return `@${user}, thanks for the interest! ${action} to this repository, and you have ${roleText}. A maintainer can start the run by commenting \`/frognano retry\` here.`;
}

export function notOnPullRequestText(): string {
  return 'frognano commands work on issues, not on pull requests. Comment on the issue the pull request came from.';
}

export function closedIssueText(): string {
  return 'This issue is closed, so I will not start a new attempt. Reopen it first, then comment `/frognano retry`.';
}

export function busyText(attempt: number, summary: string, statusUrl?: string): string {
  const link = statusUrl ? ` ([status](${statusUrl}))` : '';
  return `Attempt ${attempt} is still ${summary}${link}, so I did not start another. Comment \`/frognano cancel\` first if you want to start over.`;
}

export function retryStartedText(attempt: number, statusUrl?: string): string {
  return `Queued attempt ${attempt}.${statusUrl ? ` Progress is tracked in the [status comment](${statusUrl}).` : ''}`;
}

export function nothingToCancelText(attempt: number | null, summary?: string): string {
  if (attempt === null) return 'There is nothing to cancel: frognano has not run on this issue.';
  return `There is nothing to cancel: attempt ${attempt} has already ended${summary ? ` (${summary})` : ''}.`;
}

export function statusReplyText(
  attempt: number | null,
  summary: string | null,
  statusUrl: string | undefined,
  label: string,
): string {
  if (attempt === null) return `frognano has not run on this issue yet. Add the \`${label}\` label to start.`;
  if (summary === null)
    return `Attempt ${attempt} finished long enough ago that its record has expired. Comment \`/frognano retry\` to run again.`;
  return `Attempt ${attempt}: ${summary}.${statusUrl ? ` Details are in the [status comment](${statusUrl}).` : ''}`;
}

// ---- on the bot's pull request: follow-up rounds ----

/** The reply when a writer's request on the bot's PR cannot start a round. */
export function followUpRefusedText(why: string): string {
  return `I did not start a follow-up round: ${why.replace(/[`@]/g, '')}.`;
}

/** `/frognano status` on the bot's pull request. */
export function roundStatusText(round: number | null, summary: string | null, statusUrl?: string): string {
  if (round === null)
    return 'No follow-up round has run on this pull request yet. Comment `/frognano <what to change>`, or submit a review that contains `/frognano`, to start one.';
  if (summary === null) return `Round ${round} finished long enough ago that its record has expired.`;
  return `Round ${round}: ${summary}.${statusUrl ? ` Details are in the [status comment](${statusUrl}).` : ''}`;
}

/** An ask on the bot's pull request while a round runs: it waits, merged with any others, for the next round. */
export function askWaitingText(round: number, waiting: number): string {
  const n = waiting - 1;
  const others = n > 0 ? `, with ${n} other ask${n === 1 ? ' that waits' : 's that wait'} too` : '';
  return `Queued after round ${round}: your ask runs in the next round when round ${round} ends${others}. Comment \`/frognano cancel\` to stop round ${round} and drop the waiting asks.`;
}

/** More asks than a round takes already wait. */
export function asksFullText(round: number, waiting: number): string {
  return `${waiting} asks already wait for the round after round ${round}, the most I keep, so I did not add this one. Ask again once the next round has started.`;
}

/** `/frognano cancel` on the bot's pull request dropped asks that waited for the next round. */
export function asksDroppedText(asks: { login: string }[]): string {
  const who = [...new Set(asks.map((a) => `@${a.login}`))].join(', ');
  return `Dropped ${asks.length} ask${asks.length === 1 ? '' : 's'} that waited for the next round (from ${who}); no round will start for ${asks.length === 1 ? 'it' : 'them'}.`;
}

/** What `/frognano status` on the bot's pull request adds about asks waiting for the next round. */
export function waitingAsksText(asks: { login: string; source: string; at: string }[]): string {
  if (asks.length === 0) return '';
  const lines = asks.map(
    (a, i) =>
      `${i + 1}. ${a.source === 'review' ? 'a review' : 'a comment'} by \`${a.login.replace(/`/g, '')}\` (${a.at.slice(0, 16).replace('T', ' ')} UTC)`,
  );
  return [`Waiting for the next round (${asks.length}, oldest first, merged into one round):`, ...lines].join('\n');
}

/** A run refused by a quota (src/github/quotaComment.ts: the runner writes it too). */
export { overQuotaText } from '../github/quotaComment.js';
