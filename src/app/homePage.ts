/**
 * `GET /` once the App is registered: what this app is configured with and what to do next, for the maintainer who
 * just restarted `npm start` after the setup page (before registration, `/` is Probot's setup page). It names the App
 * (id, slug, its install page, read from GitHub with the App's JWT), the webhook path, the forwarding channel if any and
 * whether Redis answers; never a secret or a path on this host.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppIdentity } from '../github/appIdentity.js';
import { escapeHtml } from '../runs/page/html.js';
import { redact } from '../util/redact.js';

export interface HomePageFacts {
  appId: number;
  webhookPath: string;
  /** WEBHOOK_PROXY_URL: the smee channel the app forwards from. */
  channel?: string;
  /** Whether WEBHOOK_SECRET is set (its value never appears). */
  secretSet: boolean;
  label: string;
  /** The App as GitHub knows it; throws when GitHub does not answer. */
  identity: () => Promise<AppIdentity>;
  /** Redis: undefined when it answers, else why not. */
  redisProblem: () => Promise<string | undefined>;
}

/** How long the page waits for GitHub's answer about the App before it renders without it. */
const IDENTITY_WAIT_MS = 5_000;

/** The handler for Probot's Server (`addHandler`): answers GET and HEAD of `/`, nothing else. */
export function homePageHandler(facts: HomePageFacts): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  let known: AppIdentity | undefined;
  return async (req, res) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || (req.url ?? '').split('?')[0] !== '/') return false;
    let identity: AppIdentity | string;
    try {
      identity = known ??= await withTimeout(facts.identity(), IDENTITY_WAIT_MS);
    } catch (err) {
      // An error's text may carry what a request sent: redacted like every text that leaves the process.
      identity = redact(err instanceof Error ? err.message : String(err));
    }
    const redisProblem = await facts.redisProblem().then(
      (problem) => (problem === undefined ? undefined : redact(problem)),
      (err: unknown) => redact(String(err)),
    );
    const html = renderHomePage(facts, identity, redisProblem);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : html);
    return true;
  };
}

/** The page; `identity` is the App, or why GitHub could not say. */
export function renderHomePage(facts: HomePageFacts, identity: AppIdentity | string, redisProblem?: string): string {
  const e = escapeHtml;
  const app =
    typeof identity === 'string'
      ? `id ${facts.appId} (GitHub did not say more: ${e(identity)})`
      : `<a href="${e(identity.htmlUrl)}">${e(identity.name)}</a>: id ${facts.appId}, slug <code>${e(identity.slug)}</code>`;
  const install =
    typeof identity === 'string'
      ? "Install the App on the repositories it may work on (the App's page on GitHub, <em>Install App</em>)."
      : `<a href="${e(identity.htmlUrl)}/installations/new">Install the App</a> on the repositories it may work on.`;
  const channel = facts.channel
    ? `<code>${e(facts.channel)}</code>, forwarded to <code>${e(facts.webhookPath)}</code>`
    : "none: GitHub posts to this app's own address, which must be reachable from GitHub";
  const secret = facts.secretSet ? 'set' : 'not set: set WEBHOOK_SECRET to the secret the App was registered with';
  const redis = redisProblem ? `not reachable: ${e(redisProblem)} (set REDIS_URL)` : 'reachable';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>frognano-bot</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em}code{background:#f4f4f4;padding:0 .2em}</style>
</head><body>
<h1>frognano-bot is running</h1>
<h2>Configured</h2>
<ul>
<li>GitHub App: ${app}</li>
<li>Webhooks: <code>POST ${e(facts.webhookPath)}</code> (and <code>POST /</code>); webhook secret ${secret}</li>
<li>Webhook channel: ${channel}</li>
<li>Redis: ${redis}</li>
</ul>
<h2>Next</h2>
<ol>
<li>${install}</li>
<li>Start a runner where the model is: <code>npm run runner</code>, with the same App credentials and Redis and a model (README, <em>Running a runner</em>).</li>
<li>Check <a href="/readyz">/readyz</a>: it says <code>ready</code> when Redis answers.</li>
<li>Add the label <code>${e(facts.label)}</code> to an open issue of an installed repository: a draft pull request follows.</li>
</ol>
</body></html>
`;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
