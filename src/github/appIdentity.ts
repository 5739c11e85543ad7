import type { GitHubClient } from './client.js';

/** The App as GitHub knows it: what the app's `/` page names and links to. */
export interface AppIdentity {
  slug: string;
  name: string;
  /** The App's public page (https://github.com/apps/<slug>); its install page is `<htmlUrl>/installations/new`. */
  htmlUrl: string;
}

/** `GET /app` with the App's own JWT (Probot's `app.auth()` without an installation). */
export async function readAppIdentity(appClient: GitHubClient): Promise<AppIdentity> {
  const { data } = await appClient.request('GET /app');
  if (!data) throw new Error('GitHub returned no App');
  return { slug: data.slug ?? String(data.id), name: data.name, htmlUrl: data.html_url };
}
