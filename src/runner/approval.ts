import type { RepoConfig } from '../github/repoConfig.js';
import type { JobData } from '../queue/schema.js';
import { automaticSource } from '../queue/verifyRepair.js';

/**
 * Whose approval of this run's head does not count: its trigger, unless the repository allows it. A head no person
 * asked for (a CI-fix round) excludes nobody: any writer may approve it.
 */
export function twoPersonRule(
  config: Pick<RepoConfig, 'approval'>,
  data: Pick<JobData, 'triggeredBy' | 'trigger'>,
): string | undefined {
  if (automaticSource(data.trigger)) return undefined;
  return config.approval.allowTriggerApproval ? undefined : data.triggeredBy.login;
}
