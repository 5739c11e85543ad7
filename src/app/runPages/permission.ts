/** The slice of Octokit the check needs; Probot's installation client and @octokit/rest's both fit. */
export interface PermissionOctokit {
  request(route: string, params?: Record<string, unknown>): Promise<{ data: any }>;
}

/** May `login` read `owner/repo`'s runs? Asked on every page (answers are kept a minute). */
export type PermissionLookup = (repo: { owner: string; repo: string }, login: string) => Promise<boolean>;

/** Roles that can read a repository (GitHub's `role_name`; `permission` gives the legacy admin/write/read/none). */
const READ_ROLES = new Set(['admin', 'maintain', 'write', 'triage', 'read']);
const CACHE_MS = 60_000;
const CACHE_MAX = 2000;

/**
 * Reads the user's permission on the repository with the installation's token
 * (`GET /repos/{owner}/{repo}/collaborators/{username}/permission`). No installation on the repository, an unknown
 * user, or `none` all mean no access. `octokitFor` resolves the installation client of a repository.
 */
export function collaboratorPermissionLookup(
  octokitFor: (repo: { owner: string; repo: string }) => Promise<PermissionOctokit | null>,
  nowMs: () => number = Date.now,
): PermissionLookup {
  const cache = new Map<string, { allowed: boolean; at: number }>();
  return async (repo, login) => {
    const key = `${repo.owner}/${repo.repo}/${login}`.toLowerCase();
    const hit = cache.get(key);
    if (hit && nowMs() - hit.at < CACHE_MS) return hit.allowed;
    const allowed = await askGitHub(octokitFor, repo, login);
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(key, { allowed, at: nowMs() });
    return allowed;
  };
}

async function askGitHub(
  octokitFor: (repo: { owner: string; repo: string }) => Promise<PermissionOctokit | null>,
  repo: { owner: string; repo: string },
  login: string,
): Promise<boolean> {
  try {
    const octokit = await octokitFor(repo);
    if (!octokit) return false;
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner: repo.owner,
      repo: repo.repo,
      username: login,
    });
    const role = String(data?.role_name ?? data?.permission ?? 'none');
    return READ_ROLES.has(role);
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 404 || status === 403) return false;
    throw err;
  }
}
