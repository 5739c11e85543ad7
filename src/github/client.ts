import { ProbotOctokit } from 'probot';
import { registerSecret } from '../util/redact.js';

/** The Octokit flavour used everywhere (Probot's: retry, throttling, pagination, REST methods). */
export type GitHubClient = InstanceType<typeof ProbotOctokit>;

export interface AppCredentials {
  appId: number | string;
  privateKey: string;
  /** API base URL for GitHub Enterprise Server; api.github.com when omitted. */
  baseUrl?: string;
}

export interface InstallationAccess {
  /** REST client authenticated with the installation token. */
  octokit: GitHubClient;
  /** The token itself, for git over HTTPS. Registered with redact() the moment it exists. */
  token: string;
  expiresAt: string;
}

/**
 * Mints a short-lived installation token limited to ONE repository and to the permissions the runner
 * needs, and returns a client using it. The same token authenticates the host's git clone/push.
 */
export async function createInstallationAccess(
  app: AppCredentials,
  o: { installationId: number; repo: string; log?: unknown; retry?: boolean; permissions?: Record<string, string> },
): Promise<InstallationAccess> {
  const common = {
    ...(app.baseUrl ? { baseUrl: app.baseUrl } : {}),
    ...(o.log ? { log: o.log as never } : {}),
    ...(o.retry === false ? { retry: { enabled: false }, throttle: { enabled: false } } : {}),
  };
  const appClient = new ProbotOctokit({ ...common, auth: { appId: Number(app.appId), privateKey: app.privateKey } });
  const auth = (await appClient.auth({
    type: 'installation',
    installationId: o.installationId,
    repositoryNames: [o.repo],
    permissions: o.permissions ?? {
      contents: 'write',
      pull_requests: 'write',
      issues: 'write',
      checks: 'write',
      metadata: 'read',
    },
  })) as { token: string; expiresAt: string };
  registerSecret(auth.token);
  const octokit = new ProbotOctokit({ ...common, auth: { token: auth.token } });
  return { octokit, token: auth.token, expiresAt: auth.expiresAt };
}
