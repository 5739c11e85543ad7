import type { JobData } from '../schema.js';

/**
 * Who a job is charged to: its installation (the account login, as the quotas file names it: every repository
 * of an installation belongs to that account) and its repository. Lower-cased, as GitHub names are.
 */
export interface Tenant {
  installation: string;
  repository: string;
}

/** `c0`: a person waits on an open pull request (follow-up rounds); `c1`: fresh work on an issue. */
export type ServiceClass = 'c0' | 'c1';

export function tenantOf(d: Pick<JobData, 'owner' | 'repo' | 'eval'>): Tenant {
  // An eval run is its own tenant (`eval:<name>`), its instances' repositories its repositories.
  if (d.eval)
    return { installation: d.eval.tenant, repository: `${d.eval.tenant}/${d.owner}__${d.repo}`.toLowerCase() };
  const installation = d.owner.toLowerCase();
  return { installation, repository: `${installation}/${d.repo.toLowerCase()}` };
}

export function serviceClassOf(d: Pick<JobData, 'followUp'>): ServiceClass {
  return d.followUp ? 'c0' : 'c1';
}
