import { postComment } from '../github/comments.js';
import type { IssueRef } from '../github/statusComment.js';
import { askOf, readWaitingAsks, takeWaitingAsks, type WaitingAdded } from '../queue/asks.js';
import type { IssueKey } from '../queue/attempts.js';
import { pullRequestLockKey } from '../queue/followUps.js';
import { withRedisLock } from '../queue/lock.js';
import type { Delivery, HandlerDeps } from './deps.js';
import * as msg from './messages.js';

/**
 * Asks on the bot's pull request that wait for its next round (src/queue/asks.ts), as the app shows them: the
 * answer to an ask that waits, `/frognano status` listing them, `/frognano cancel` dropping them.
 */

/** One short reply to an ask that waits (a redelivered one gets none; the 👀 on a comment came before). */
export async function answerWaitingAsk(d: Delivery, pr: IssueRef, round: number, added: WaitingAdded): Promise<void> {
  if (added.kind === 'duplicate') return void d.log.info('ask already waiting (redelivery)');
  const text = added.kind === 'added' ? msg.askWaitingText(round, added.count) : msg.asksFullText(round, added.count);
  await postComment(d.octokit, pr, text);
}

export interface WaitingAskLine {
  login: string;
  source: string;
  at: string;
}

export async function listWaitingAsks(deps: HandlerDeps, key: IssueKey): Promise<WaitingAskLine[]> {
  return (await readWaitingAsks(deps.redis, key)).map(line);
}

/** Forgets the waiting asks and, when there were any, says whose were dropped. */
export async function dropWaitingAsks(deps: HandlerDeps, d: Delivery, key: IssueKey): Promise<void> {
  const dropped = await withRedisLock(deps.redis, pullRequestLockKey(key), () => takeWaitingAsks(deps.redis, key));
  if (dropped.length === 0) return;
  d.log.info({ asks: dropped.length }, 'cancel: dropped the waiting asks');
  await postComment(d.octokit, key, msg.asksDroppedText(dropped.map(line)));
}

function line(req: Parameters<typeof askOf>[0]): WaitingAskLine {
  const ask = askOf(req);
  return { login: ask.author.login, source: ask.source, at: ask.askedAt };
}
