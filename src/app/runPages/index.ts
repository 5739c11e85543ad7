import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Probot } from 'probot';
import { trajectoryStoreFromEnv } from '../../runs/config.js';
import { createRunPagesHandler } from '../../runs/http.js';
import type { TrajectoryStore } from '../../runs/trajectoryStore.js';
import { publicUrlFromEnv } from '../../runs/url.js';
import { collaboratorPermissionLookup, type PermissionOctokit } from './permission.js';
import { createGitHubSignIn } from './signIn.js';

const SWEEP_EVERY_MS = 24 * 3600 * 1000;

export interface RunPagesMount {
  handler: (req: IncomingMessage, res: ServerResponse) => boolean;
  store: TrajectoryStore;
  stop(): void;
}

/**
 * The run pages as the app serves them (docs/trajectory-pages.md): the trajectory store from the environment, GitHub
 * sign-in with the App's OAuth credentials, the permission check with the installation's token. Null, with a
 * warning, when the App has no OAuth credentials: the pages are never served without sign-in.
 */
export function runPagesFromEnv(app: Probot, env: NodeJS.ProcessEnv = process.env): RunPagesMount | null {
  const clientId = env.GITHUB_CLIENT_ID?.trim();
  const clientSecret = env.GITHUB_CLIENT_SECRET?.trim();
  if (!clientId || !clientSecret) {
    app.log.warn(
      "run pages are off: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (the App's OAuth credentials) to serve /runs",
    );
    return null;
  }
  const store = trajectoryStoreFromEnv(env);
  const ghes = env.GHE_HOST?.trim();
  const gate = createGitHubSignIn({
    clientId,
    clientSecret,
    // A secret of its own when given; else one derived from the client secret, so no new setting is required.
    sessionSecret:
      env.FROGNANO_SESSION_SECRET?.trim() ||
      createHmac('sha256', clientSecret).update('frognano run-page sessions').digest('hex'),
    permission: collaboratorPermissionLookup((repo) => installationOctokit(app, repo)),
    webUrl: ghes ? `https://${ghes}` : undefined,
    apiUrl: ghes ? `https://${ghes}/api/v3` : undefined,
    publicUrl: publicUrlFromEnv(env),
  });
  const handler = createRunPagesHandler({
    source: store,
    gate,
    githubUrl: ghes ? `https://${ghes}` : 'https://github.com',
    log: app.log,
  });
  const sweep = () =>
    store.sweep().then(
      (n) => n > 0 && app.log.info(`trajectory store: removed ${n} objects past retention`),
      (err: unknown) => app.log.warn({ err }, 'trajectory store sweep failed'),
    );
  // A local directory sweeps itself; an S3 bucket keeps its own lifecycle rule (docs/trajectory-pages.md).
  const timer = store.sweepsItself ? setInterval(sweep, SWEEP_EVERY_MS) : undefined;
  timer?.unref();
  if (store.sweepsItself) void sweep();
  app.log.info(`run pages: /runs, trajectories in ${store.description}`);
  return { handler, store, stop: () => timer && clearInterval(timer) };
}

/** The installation client of the repository; null when the App is not installed there. */
async function installationOctokit(
  app: Probot,
  repo: { owner: string; repo: string },
): Promise<PermissionOctokit | null> {
  const appClient = await app.auth();
  try {
    const { data } = await appClient.request('GET /repos/{owner}/{repo}/installation', {
      owner: repo.owner,
      repo: repo.repo,
    });
    return (await app.auth(data.id)) as unknown as PermissionOctokit;
  } catch (err) {
    if ((err as { status?: number }).status === 404) return null;
    throw err;
  }
}
