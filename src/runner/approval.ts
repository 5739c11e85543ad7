import type { RepoConfig } from '../github/repoConfig.js';
import type { JobData } from '../queue/schema.js';

/** Whose approval of this run's head does not count: its trigger, unless the repository allows it. */
export function twoPersonRule(config: Pick<RepoConfig, 'approval'>, data: Pick<JobData, 'triggeredBy'>): string | undefined {
  return config.approval.allowTriggerApproval ? undefined : data.triggeredBy.login;
}
