/**
 * The webhook server that `npm start` (main.ts) loads once `.env` is read and the settings are checked. With APP_ID and a private key (env or .env) it serves Probot's
 * webhook endpoint, the frognano handlers and the ops routes (/healthz, /readyz, /metrics). Without
 * them Probot starts in setup mode: open http://localhost:3000 to register the GitHub App from
 * app.yml (manifest flow), which writes the credentials to .env; then restart.
 */
import { run, type Probot, type ApplicationFunctionOptions } from 'probot';
import type { Redis } from 'ioredis';
import { startSharedService, type SharedService } from './fairShareSetup.js';
import { createFrognanoApp, labelFromEnv } from './index.js';
import { handleReviewSubmitted } from './review.js';
import { capProbotWebhookBodies } from './webhookBody.js';
import { runPagesFromEnv } from './runPages/index.js';
import { RunPagesSettingsError, runPagesSettingsFromEnv } from './runPages/settings.js';
import { createRedisConnection } from '../queue/connection.js';
import { describeRedisTarget, redisConfigFromEnv } from '../queue/redisConfig.js';
import { setBotKeyPrefix } from '../queue/keys.js';
import { answerRedisOutagesWith503 } from './redisOutage.js';
import { createQueue, type FrognanoQueue } from '../queue/queue.js';
import { createCiJudgeQueue, type CiJudgeQueue } from '../queue/ciJudge.js';
import { startCiJudgeWorker } from './ciJudgeWorker.js';
import { addReadinessCheck, opsHandler, redisCheck } from '../ops/http.js';
import { metrics } from '../ops/metrics.js';
import { logger } from '../ops/logger.js';
import { keepEnvironment, updateDotEnv } from '../util/dotenv.js';
import path from 'node:path';
import { isRedisConnectionError, untilReady, watchRedisState, type StateLog } from '../util/redisState.js';
import { probotRedisFromEnv } from './probotRedis.js';
import { readSetting } from '../util/settings.js';
import { channelMaker, forwardTarget, forwardWebhooks, type WebhookForwarder } from './webhookProxy.js';
import { serveWebhooksAtRoot } from './webhookRoot.js';
import { homePageHandler } from './homePage.js';
import { readAppIdentity } from '../github/appIdentity.js';
import { runReadinessChecks } from '../ops/http.js';
import type { GitHubClient } from '../github/client.js';

let resources:
  { redis: Redis; queueConnection: Redis; queue: FrognanoQueue; shared: SharedService; ciJudge: CiJudging } | undefined;

/** The CI settle window's queue and the app's worker that judges from it (src/queue/ciJudge.ts). */
interface CiJudging {
  queue: CiJudgeQueue;
  worker: { close(): Promise<void> };
}

/** Runs only when Probot has credentials (never in setup mode), so setup needs no Redis. */
async function frognano(app: Probot, options: ApplicationFunctionOptions): Promise<void> {
  // Before anything reads a body: an oversized POST is refused with 413, never buffered or HMAC'd.
  capProbotWebhookBodies(app);
  // The webhook URL Probot's setup page registers without a channel is `<address>/`: serve it (webhookRoot.ts).
  serveWebhooksAtRoot(app, webhookPath());
  const redisConfig = redisConfigFromEnv();
  setBotKeyPrefix(redisConfig.keyPrefix);
  // Fail-fast connections: while Redis is unreachable a webhook is answered 503 instead of hanging.
  const queueConnection = createRedisConnection(redisConfig.target, { purpose: 'enqueue' });
  const redis = createRedisConnection(redisConfig.target, { purpose: 'enqueue' });
  // One line per change of state (down, retrying, back) for every client, never one per failed reconnect.
  watchRedisState(queueConnection, 'queue', app.log);
  watchRedisState(redis, 'state', app.log);
  answerRedisOutagesWith503(app, [queueConnection, redis]);
  // The fail-fast clients refuse commands until connected: wait briefly so a normal start does not log that.
  await untilReady(redis, READY_WAIT_MS);
  const prefix = redisConfig.queuePrefix;
  const queue = createQueue(queueConnection, { prefix });
  queue.on('error', quietRedisErrors(app.log));
  const label = labelFromEnv();
  // Fair share and quotas (docs/operating-at-scale.md); BullMQ's event stream needs a connection of its own.
  const shared = await startSharedService({
    queue,
    redis,
    events: watched(createRedisConnection(redisConfig.target), 'events', app.log),
    prefix,
    log: app.log,
  });
  const { fairShare, quotas } = shared;

  const ciJudgeQueue = createCiJudgeQueue(queueConnection, prefix);
  ciJudgeQueue.on('error', quietRedisErrors(app.log));
  const appDeps = { queue, redis, label, fairShare, quotas, metrics, ciJudge: ciJudgeQueue };
  await createFrognanoApp(appDeps)(app);
  // A BullMQ worker blocks on its connection: one of its own.
  const judgeConnection = watched(createRedisConnection(redisConfig.target), 'ci-judge', app.log);
  const ciJudgeWorker = startCiJudgeWorker(app, appDeps, judgeConnection, prefix);
  // The approval gate on frognano's draft pull requests (src/app/review.ts).
  app.on('pull_request_review.submitted', async (context) => {
    await handleReviewSubmitted(context);
  });

  addReadinessCheck(redisCheck(redis));
  options.addHandler?.(opsHandler);
  options.addHandler?.(homePage(app, redis, label));
  // The run pages (/runs/...) behind GitHub sign-in; off without the App's OAuth credentials.
  const runPages = runPagesFromEnv(app, redis);
  if (runPages) options.addHandler?.(runPages.handler);
  // /metrics reads the queue's counts on each scrape, so they are never older than the scrape.
  metrics.bindQueue(queue);
  // Held jobs wait in the fair share's lines (BullMQ counts them as delayed): the autoscaling backlog adds them.
  if (fairShare) metrics.addBacklogSource(() => fairShare.backlog());
  resources = { redis, queueConnection, queue, shared, ciJudge: { queue: ciJudgeQueue, worker: ciJudgeWorker } };
  const where = describeRedisTarget(redisConfig.target);
  app.log.info(`frognano: triggering on label "${label}", queue in Redis ${where} (key prefix ${prefix ?? 'bull'})`);
}

/** WEBHOOK_PATH as Probot reads it (its default when unset). */
function webhookPath(): string {
  return readSetting(process.env, 'WEBHOOK_PATH') ?? '/api/github/webhooks';
}

/** `GET /` after registration (homePage.ts): the App, the webhook path and channel, Redis, and what to do next. */
function homePage(app: Probot, redis: Redis, label: string) {
  return homePageHandler({
    appId: readSetting(process.env, 'APP_ID') ?? 0,
    webhookPath: webhookPath(),
    channel: readSetting(process.env, 'WEBHOOK_PROXY_URL'),
    secretSet: readSetting(process.env, 'WEBHOOK_SECRET') !== undefined,
    label,
    identity: async () => readAppIdentity((await app.auth()) as unknown as GitHubClient),
    redisProblem: async () => (await runReadinessChecks([redisCheck(redis)])).checks[0]?.error,
  });
}

/**
 * With WEBHOOK_PROXY_URL set (the setup page writes it), deliveries come through that channel: forward them to the
 * webhook path (webhookProxy.ts). Only once the App is registered (`resources` exist): the setup page needs none.
 */
async function forwardFromChannel(server: { host: string; port: number }): Promise<WebhookForwarder | undefined> {
  const channel = readSetting(process.env, 'WEBHOOK_PROXY_URL');
  if (!resources || !channel) return undefined;
  const log = logger.child({ name: 'webhook-proxy' });
  return forwardWebhooks({ channel, target: forwardTarget(server.host, server.port, webhookPath()), log });
}

/** How long the start waits for Redis before going on without it (webhooks are answered 503 until it is there). */
const READY_WAIT_MS = 3_000;

/** For BullMQ's `error` events: an unreachable Redis is the watchers' to say (once); anything else is logged. */
function quietRedisErrors(log: StateLog): (err: Error) => void {
  return (err) => {
    if (!isRedisConnectionError(err)) log.warn({ err: err.message }, 'queue error');
  };
}

function watched(client: Redis, name: string, log: StateLog): Redis {
  watchRedisState(client, name, log);
  return client;
}

/**
 * How long a SIGTERM may take: a clean stop normally takes well under a second, but with Redis down the queue's and
 * the clients' closes wait for a reconnect that never comes; past this the process exits anyway (in time for
 * Kubernetes' default 30 s grace and `docker compose stop`'s 10 s).
 */
const SHUTDOWN_DEADLINE_MS = 5_000;

async function main(): Promise<void> {
  // Settings that must stop the start-up are read before anything listens (throws RunPagesSettingsError).
  runPagesSettingsFromEnv(process.env);
  // Probot's run() copies `.env` over process.env before its first await; keepEnvironment puts the environment back
  // (main.ts has already read `.env` without overriding), and Probot reads its own options from that same snapshot.
  const log = logger.child({ name: 'app' });
  // Probot's Redis client for its request throttling, made and watched here (probotRedis.ts); Probot gets no REDIS_URL.
  const probotRedis = probotRedisFromEnv(process.env, log);
  // Probot gets no WEBHOOK_PROXY_URL either: it would fetch smee-client with npx and stop the start when the channel
  // does not answer; forwardFromChannel does it with the dependency. Its setup page still reads it from process.env.
  const SmeeClient = channelMaker(readSetting(process.env, 'FROGNANO_SMEE_URL') ?? 'https://smee.io');
  const env = { ...process.env, REDIS_URL: undefined, WEBHOOK_PROXY_URL: undefined };
  // The setup page's writes to .env keep its comments and end it with a newline (updateDotEnv says why).
  const updateEnv = (vars: NodeJS.ProcessEnv) => updateDotEnv(path.join(process.cwd(), '.env'), vars);
  const options = { log, env, Octokit: probotRedis?.Octokit, SmeeClient, updateEnv };
  const server = await keepEnvironment(() => run(frognano, options));
  const forwarder = await forwardFromChannel(server);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: shutting down`);
    setTimeout(() => {
      logger.warn(`${signal}: shutdown took over ${SHUTDOWN_DEADLINE_MS / 1000} s (is Redis down?); exiting now`);
      // Connections still retrying would keep the event loop alive: drop them without waiting.
      for (const c of resources ? [resources.redis, resources.queueConnection] : []) c.disconnect();
      probotRedis?.client.disconnect();
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    try {
      await forwarder?.stop();
      await server.stop();
      if (resources) {
        metrics.bindQueue(null);
        await resources.shared.stop();
        await resources.ciJudge.worker.close();
        await resources.ciJudge.queue.close();
        await resources.queue.close();
        await Promise.all([resources.redis.quit(), resources.queueConnection.quit()]);
      }
      await probotRedis?.close();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'error while shutting down');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: unknown) => {
  if (err instanceof RunPagesSettingsError) {
    // A setting to fix, not a fault: one line that names it, no stack, and the exit code of every setting error.
    process.stderr.write(`frognano app: ${err.message}\n`);
    process.exit(2);
  }
  logger.fatal({ err }, 'frognano app failed to start');
  process.exit(1);
});
