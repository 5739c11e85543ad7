import { z } from 'zod';

/** Roles allowed to start, retry and cancel frognano runs: they can push, so they can review and merge. */
export const TRIGGER_ROLES = ['admin', 'maintain', 'write'] as const;

const PermissionResponse = z.object({
  // Legacy field: admin | write | read | none (maintain shows as write, triage as read).
  permission: z.string(),
  // Fine-grained role, incl. maintain/triage and custom role names; absent on old GHES.
  role_name: z.string().optional(),
});

export interface PermissionOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: unknown }>;
}

export interface PermissionResult {
  allowed: boolean;
  /** What GitHub reported (role_name when present), or 'none'. */
  role: string;
}

/**
 * Asks GitHub what `username` may do in the repository. A 404 (not a user, or no access to a
 * private repo) means no permission; other errors propagate so a GitHub outage is not mistaken
 * for a refusal.
 */
export async function getUserPermission(
  octokit: PermissionOctokit,
  owner: string,
  repo: string,
  username: string,
): Promise<PermissionResult> {
  let data: unknown;
  try {
    ({ data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner,
      repo,
      username,
    }));
  } catch (err) {
    if ((err as { status?: number }).status === 404) return { allowed: false, role: 'none' };
    throw err;
  }
  const parsed = PermissionResponse.safeParse(data);
  if (!parsed.success) return { allowed: false, role: 'unknown' };
  const { permission, role_name } = parsed.data;
  // Custom roles have their own names; their base permission still shows up in `permission`.
  const allowed =
    (TRIGGER_ROLES as readonly string[]).includes(role_name ?? '') || permission === 'admin' || permission === 'write';
  return { allowed, role: role_name ?? permission };
}
