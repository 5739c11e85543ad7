import type { Probot } from 'probot';

/**
 * Serves `POST /` as the webhook path too. Probot's setup page registers the App with `<address>/` as its webhook URL
 * when it has no forwarding channel (its manifest code, not ours), while webhooks are served at WEBHOOK_PATH
 * (`/api/github/webhooks`): without this, every delivery to such an App is a 404. Only a POST to exactly `/` is
 * rewritten, before the body cap and the signature check see it; `GET /` stays the home page (homePage.ts).
 */
export function serveWebhooksAtRoot(probot: Probot, webhookPath: string): void {
  const original = probot.getNodeMiddleware.bind(probot);
  probot.getNodeMiddleware = async (opts) => {
    const inner = await original(opts);
    const atRoot: typeof inner = (req, res, next) => {
      const [path, query] = (req.url ?? '').split('?', 2);
      if (req.method === 'POST' && path === '/')
        req.url = query === undefined ? webhookPath : `${webhookPath}?${query}`;
      return inner(req, res, next);
    };
    return atRoot;
  };
}
