import { postComment } from '../github/comments.js';
import type { IssueKey } from '../queue/attempts.js';
import { setAutofix } from '../queue/ciFix.js';
import type { Delivery, HandlerDeps } from './deps.js';

/** `/frognano autofix off` (or `on`) on the bot's pull request: whether failing CI starts a round by itself. */
export function autofixSwitch(body: string | null | undefined): boolean | null {
  const m = /^[ \t]*\/frognano[ \t]+autofix[ \t]+(on|off)\b/im.exec(body ?? '');
  return m ? m[1]!.toLowerCase() === 'on' : null;
}

/** Stores the switch for this pull request (permission already checked) and says what it means. */
export async function onAutofixCommand(
  deps: HandlerDeps,
  d: Delivery,
  pr: IssueKey,
  body: string | null,
): Promise<void> {
  const on = autofixSwitch(body);
  if (on === null) return;
  await setAutofix(deps.redis, pr, on);
  d.log.info({ on }, 'autofix switched');
  const text = on
    ? 'CI fixes are on again for this pull request: when its checks fail on a commit the bot pushed, frognano starts a round to fix them.'
    : 'CI fixes are off for this pull request: failing checks start no round. `/frognano autofix on` turns them back on.';
  await postComment(d.octokit, pr, text);
}
