import type { FollowUp, JobData } from '../queue/schema.js';

/**
 * How a round on the bot's pull request names itself in its commit subject and in the run-history row: a writer's
 * feedback or review, or (source `ci`) the failing checks it answered.
 */
type RoundData = Pick<JobData, 'triggeredBy' | 'ciFix'> & { followUp: Pick<FollowUp, 'source' | 'pullNumber' | 'round'> };

const WHAT: Record<FollowUp['source'], string> = { comment: 'feedback', review: 'review', ci: 'failing CI' };

export function roundSubject(data: RoundData): string {
  const f = data.followUp;
  return `frognano: address ${WHAT[f.source]} on #${f.pullNumber} (round ${f.round})`;
}

/** The failing checks a CI-fix round answers, for people: `lint`, `test` (and 3 more). */
export function answeredChecks(data: Pick<JobData, 'ciFix'>, max = 5): string {
  const names = (data.ciFix?.checks ?? []).map((c) => `\`${c.name.replace(/`/g, "'")}\``);
  const more = names.length - max + (data.ciFix?.omitted ?? 0);
  return `${names.slice(0, max).join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`;
}

/** Who asked for the round, and how (`review by maint`; `failing CI: \`test\``). */
export function roundTrigger(data: RoundData): string {
  if (data.followUp.source === 'ci') return `failing CI: ${answeredChecks(data)}`;
  return `${data.followUp.source} by ${data.triggeredBy.login}`;
}

/** `Follow-up 2`, or `CI fix 2` (the round number is the pull request's, shared by both kinds). */
export function roundName(data: RoundData): string {
  return `${data.followUp.source === 'ci' ? 'CI fix' : 'Follow-up'} ${data.followUp.round}`;
}
