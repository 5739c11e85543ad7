import { answeredChecks } from '../queue/ciFix.js';
import type { FollowUp, JobData } from '../queue/schema.js';

/**
 * How a round on the bot's pull request names itself in its commit subject and in the run-history row: a writer's
 * feedback or review, or (source `ci`) the failing checks it answered.
 */
type RoundData = Pick<JobData, 'triggeredBy' | 'ciFix'> & {
  followUp: Pick<FollowUp, 'source' | 'pullNumber' | 'round'>;
};

const WHAT: Record<FollowUp['source'], string> = {
  comment: 'feedback',
  review: 'review',
  ci: 'failing CI',
  verify: 'failing verification',
};

export function roundSubject(data: RoundData): string {
  const f = data.followUp;
  return `frognano: address ${WHAT[f.source]} on #${f.pullNumber} (round ${f.round})`;
}

/** Who asked for the round, and how (`review by maint`; `failing CI: \`test\``). */
export function roundTrigger(data: RoundData): string {
  if (data.followUp.source === 'ci') return `failing CI: ${data.ciFix ? answeredChecks(data.ciFix) : '?'}`;
  if (data.followUp.source === 'verify') return 'failing verification';
  return `${data.followUp.source} by ${data.triggeredBy.login}`;
}

/** `Follow-up 2`, or `CI fix 2` (the round number is the pull request's, shared by both kinds). */
export function roundName(data: RoundData): string {
  const kind = { ci: 'CI fix', verify: 'Repair' }[data.followUp.source as string] ?? 'Follow-up';
  return `${kind} ${data.followUp.round}`;
}
