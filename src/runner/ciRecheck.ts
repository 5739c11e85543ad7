import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { scheduleCiJudgment, takeCiFailure, type CiJudgeQueue } from '../queue/ciJudge.js';
import { pullRequestKey } from '../queue/followUps.js';
import { JobDataSchema } from '../queue/schema.js';
import { pullRequestRound } from './nextRound.js';

/**
 * When a round of a pull request ends: a CI failure that arrived while it ran (src/app/ciFix.ts remembered it) is
 * handed to the app's judgment worker (src/queue/ciJudge.ts). If the round pushed nothing the head is unchanged and
 * the failure still stands, so it may start a round now; if the head moved, the new head's own CI decides. Never
 * throws: the round's own result stands.
 */
export async function recheckCiAfterRound(
  ciJudge: CiJudgeQueue,
  redis: Redis,
  jobData: unknown,
  log: Logger,
): Promise<void> {
  const parsed = JobDataSchema.safeParse(jobData);
  const ended = parsed.success ? pullRequestRound(parsed.data) : null;
  if (!ended) return;
  try {
    const ev = await takeCiFailure(redis, pullRequestKey(ended.owner, ended.repo, ended.pullNumber));
    if (!ev) return;
    await scheduleCiJudgment(ciJudge, { ev, after: 'round' }, 0);
    log.info({ sha: ev.headSha.slice(0, 12) }, 'a CI failure that came during the round is judged again');
  } catch (err) {
    log.warn({ err, pr: ended.pullNumber }, 'could not hand the CI failure that came during the round back');
  }
}
