import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import type { Probot } from 'probot';
import { trajectoryStoreFromEnv } from '../../runs/config.js';
import { createRunPagesHandler } from '../../runs/http.js';
import type { TrajectoryStore } from '../../runs/trajectoryStore.js';
import { collaboratorPermissionLookup, type PermissionOctokit } from './permission.js';
import { redisSessionVersions } from './sessions.js';
import { runPagesSettingsFromEnv } from './settings.js';
import { createGitHubSignIn } from './signIn.js';

const SWEEP_EVERY_MS = 24 * 3600 * 1000;

export interface RunPagesMount {
  handler: (req: IncomingMessage, res: ServerResponse) => boolean;
  store: TrajectoryStore;
  stop(): void;
}

/**
 * The run pages as the app serves them (docs/trajectory-pages.md): the trajectory store from the environment, GitHub
 * sign-in with the App's OAuth credentials and sessions kept in Redis, the permission check with the installation's
 * token. Null, with a warning, when the App has no OAuth credentials or no known address: the pages are never
 * served without sign-in. Throws RunPagesSettingsError for a weak session secret (settings.ts).
 */
export function runPagesFromEnv(app: Probot, redis: Redis, env: NodeJS.ProcessEnv = process.env): RunPagesMount | null {
  const setup = runPagesSettingsFromEnv(env);
  if ('off' in setup) {
    app.log.warn(setup.off);
    return null;
  }
  const s = setup.on;
  const store = trajectoryStoreFromEnv(env);
  const gate = createGitHubSignIn({
    clientId: s.clientId,
    clientSecret: s.clientSecret,
    sessionSecret: s.sessionSecret,
    sessions: redisSessionVersions(redis),
    permission: collaboratorPermissionLookup((repo) => installationOctokit(app, repo)),
    webUrl: s.ghesUrl,
    apiUrl: s.ghesUrl ? `${s.ghesUrl}/api/v3` : undefined,
    publicUrl: s.publicUrl,
    trustedProxies: s.trustedProxies,
  });
  const handler = createRunPagesHandler({
    source: store,
    gate,
    githubUrl: s.ghesUrl ?? 'https://github.com',
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
