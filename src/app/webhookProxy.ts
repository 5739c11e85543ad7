/**
 * Webhooks on a laptop: github.com cannot post to localhost, so in development GitHub posts to a smee channel
 * (https://smee.io, or FROGNANO_SMEE_URL) and the app reads the channel's event stream and posts each delivery to its
 * own webhook path, headers (the signature among them) and body as GitHub sent them. The setup page opens the channel
 * (`channelMaker`, handed to Probot's setup, which writes WEBHOOK_PROXY_URL to `.env`); `npm start` with
 * WEBHOOK_PROXY_URL set forwards from it (`forwardWebhooks`). The client is the maintained `smee-client` package, a
 * dependency: Probot would otherwise fetch it with npx at run time, or log "SmeeClient is not available" and go on.
 */
import { SmeeClient } from 'smee-client';

/** What the app's logger offers: smee-client logs strings, errors as a second argument. */
export interface ProxyLog {
  info(msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The smee server's "new channel" address: it answers HEAD with a redirect to a fresh channel. */
export function newChannelUrl(smeeUrl: string): string {
  return new URL('new', smeeUrl.endsWith('/') ? smeeUrl : `${smeeUrl}/`).href;
}

/** What Probot's setup mode calls to open the channel (its `SmeeClient` option), on FROGNANO_SMEE_URL's server. */
export function channelMaker(smeeUrl: string): { createChannel: () => Promise<string | undefined> } {
  return { createChannel: () => SmeeClient.createChannel({ newChannelUrl: newChannelUrl(smeeUrl) }) };
}

/**
 * Where the forwarder posts: the address the server listens on (0.0.0.0 and :: are not addresses to connect to, so
 * loopback instead) and its webhook path.
 */
export function forwardTarget(host: string, port: number, webhookPath: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  const reachable = bare === '0.0.0.0' || bare === '' ? '127.0.0.1' : bare === '::' ? '::1' : bare;
  const shown = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `http://${shown}:${port}${webhookPath}`;
}

export interface WebhookForwarder {
  stop(): Promise<void>;
}

/**
 * Connects to `channel` and posts every delivery to `target`. Never throws: a channel that cannot be reached at start
 * is one warning (the event stream keeps retrying on its own, and forwarding starts once it connects); the app serves
 * its other routes meanwhile. Resolves once connected, or after `waitMs` without a connection.
 */
export async function forwardWebhooks(o: {
  channel: string;
  target: string;
  log: ProxyLog;
  waitMs?: number;
}): Promise<WebhookForwarder> {
  const client = new SmeeClient({ source: o.channel, target: o.target, logger: smeeLogger(o.log) });
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<'waiting'>((resolve) => {
    timer = setTimeout(() => resolve('waiting'), o.waitMs ?? 10_000);
  });
  const connected = client.start().then(
    () => 'connected' as const,
    (err: unknown) => ({ err }),
  );
  const outcome = await Promise.race([connected, waited]);
  clearTimeout(timer);
  if (outcome !== 'connected') {
    const why = outcome === 'waiting' ? 'no connection yet' : eventErrorText((outcome as { err: unknown }).err);
    o.log.warn({ channel: o.channel, err: why }, 'webhook channel not reachable yet; forwarding starts once it is');
  }
  return { stop: () => client.stop() };
}

/**
 * smee-client's log calls (`info(text)`, `error(text, err)`, `error(err)`) as the app's structured lines; the same
 * error again (the event stream retrying a channel that is down) is not repeated until a line of another kind.
 */
function smeeLogger(log: ProxyLog): Pick<Console, 'info' | 'error'> {
  let lastError: string | undefined;
  return {
    info: (msg: unknown) => {
      lastError = undefined;
      log.info(`webhook channel: ${String(msg)}`);
    },
    error: (msg: unknown, err?: unknown) => {
      const text = eventErrorText(err ?? msg);
      if (text === lastError) return;
      lastError = text;
      log.warn({ err: text }, `webhook channel: ${typeof msg === 'string' ? msg : 'error'}`);
    },
  };
}

/** An Error's message, or the message of an EventSource error event (not an Error), or the value as text. */
function eventErrorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
