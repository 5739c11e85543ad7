import type { Redis } from 'ioredis';
import { postComment } from '../github/comments.js';
import type { StatusOctokit } from '../github/statusComment.js';
import { issueSlug, type IssueKey } from '../queue/attempts.js';
import type { Log } from './deps.js';
import { botKey } from '../queue/keys.js';

/** Set once an outsider was answered on this issue (no expiry, like the attempt counter). */
export function outsiderAnsweredKey(key: IssueKey): string {
  return botKey('outsider-answered', issueSlug(key));
}

/**
 * Tells someone without write access why nothing happens, at most once per issue and pull request, ever:
 * otherwise anyone could make the bot comment (or react) as often as they like. The mark stays in Redis
 * beside the issue's other keys; it is dropped again only when the answer could not be posted.
 */
export async function refuseOutsider(
  redis: Redis,
  octokit: StatusOctokit,
  key: IssueKey,
  text: string,
  log: Log,
): Promise<void> {
  const mark = outsiderAnsweredKey(key);
  if ((await redis.set(mark, new Date().toISOString(), 'NX')) !== 'OK') {
    return void log.info('not answering: an outsider was already answered on this issue');
  }
  log.info('answering an outsider (once per issue)');
  try {
    await postComment(octokit, key, text);
  } catch (err) {
    await redis.del(mark);
    throw err;
  }
}
