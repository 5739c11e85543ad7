/**
 * Webhooks on a laptop (issue #29, item 2), through `npm start` in a child process: the setup page opens a smee
 * channel (a local stand-in for smee.io, never the real one) and writes WEBHOOK_PROXY_URL; the manifest carries a URL
 * the app serves; a registered app forwards a signed real delivery from the channel to its webhook path, where it is
 * handled (a job queued); `/` says what is configured before and after registration.
 */
import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { Redis } from 'ioredis';
import { createQueue } from '../../src/queue/queue.js';
import { waitFor } from '../support/waitFor.js';
import { ROOT, startChildApp, type ChildApp } from '../support/appProcess.js';
import { startSmeeStandIn, type SmeeStandIn } from '../support/smeeStandIn.js';
import { GITHUB_API, startGitHubStandIn, type GitHubStandIn } from '../support/gitHubStandIn.js';
import { labeledPayload, nockInstallationToken, nockPermission, testPrivateKey } from './helpers.js';

const SECRET = 'proxy-test-secret';
let tmp: string;
let smee: SmeeStandIn;
let github: GitHubStandIn;
const apps: ChildApp[] = [];

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'fn-proxy-'));
  copyFileSync(join(ROOT, 'app.yml'), join(tmp, 'app.yml'));
  smee = await startSmeeStandIn();
  github = await startGitHubStandIn();
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  await smee.close();
  await github.close();
  nock.cleanAll();
  rmSync(tmp, { recursive: true, force: true });
});

async function app(env: Record<string, string | undefined>): Promise<ChildApp> {
  const started = await startChildApp({ cwd: tmp, env });
  apps.push(started);
  return started;
}

/** The manifest Probot's setup page would POST to GitHub. */
async function manifestOf(base: string): Promise<{ hook_attributes: { url: string }; redirect_url: string }> {
  const html = await (await fetch(`${base}/probot`)).text();
  return JSON.parse(/name="manifest" id="manifest" value='([^']+)'/.exec(html)![1]!);
}

/** A registered App's settings, with a key file in the temp dir. */
function registered(extra: Record<string, string> = {}): Record<string, string> {
  writeFileSync(join(tmp, 'app.pem'), testPrivateKey());
  return {
    APP_ID: '4711',
    PRIVATE_KEY_PATH: join(tmp, 'app.pem'),
    WEBHOOK_SECRET: SECRET,
    GHE_HOST: github.host,
    GHE_PROTOCOL: 'http',
    ...extra,
  };
}

function signed(payload: unknown, event = 'issues'): { headers: Record<string, string>; body: string } {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
      'user-agent': 'GitHub-Hookshot/test',
    },
  };
}

describe('webhooks on a laptop', () => {
  test("setup opens a channel on FROGNANO_SMEE_URL, writes it to .env, and the manifest's hook URL is it", async () => {
    const { base, output } = await app({ FROGNANO_SMEE_URL: smee.base });
    expect(smee.channels).toHaveLength(1);
    const channel = smee.channels[0]!;
    expect(readFileSync(join(tmp, '.env'), 'utf8')).toContain(`WEBHOOK_PROXY_URL=${channel}`);
    expect((await manifestOf(base)).hook_attributes.url).toBe(channel);
    expect(output()).not.toContain('SmeeClient is not available');
  }, 60_000);

  test("without a channel the manifest's hook URL is the app's `/`, which a registered app serves as webhooks", async () => {
    const setup = await app({ NO_SMEE_SETUP: 'true' });
    // Before registration `/` is Probot's setup page.
    const before = await fetch(`${setup.base}/`, { redirect: 'manual' });
    expect([before.status, before.headers.get('location')]).toEqual([302, '/probot']);
    const hookUrl = (await manifestOf(setup.base)).hook_attributes.url;
    expect(hookUrl).toBe(`${setup.base}/`);
    await setup.stop();
    apps.pop();

    nock(GITHUB_API).persist().get('/app').reply(200, {
      id: 4711,
      slug: 'frognano-laptop',
      name: 'frognano laptop',
      html_url: 'https://github.com/apps/frognano-laptop',
    });
    const running = await app(registered());
    // The same URL on the registered app's port (a fresh one: the setup app's may still be in TIME_WAIT).
    const hookOnApp = `${running.base}${new URL(hookUrl).pathname}`;
    const ignored = signed({ ...labeledPayload({ label: 'bug' }) });
    const post = (headers: Record<string, string>, body: string) =>
      fetch(hookOnApp, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect((await post(ignored.headers, ignored.body)).status).toBe(200);
    const forged = { ...ignored.headers, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };
    expect((await post(forged, ignored.body)).status).toBe(400);

    // After registration `/` says what is configured and what to do next; no secret, no path on this host.
    const page = await fetch(`${running.base}/`);
    expect(page.status).toBe(200);
    const text = (await page.text()).replace(/<[^>]+>/g, '');
    expect(text).toContain('frognano laptop: id 4711, slug frognano-laptop');
    expect(text).toContain('POST /api/github/webhooks');
    expect(text).toContain('Webhook channel: none');
    expect(text).toContain('Redis: reachable');
    expect(text).toContain('npm run runner');
    const html = await (await fetch(`${running.base}/`)).text();
    expect(html).toContain('href="https://github.com/apps/frognano-laptop/installations/new"');
    expect(html).toContain('href="/readyz"');
    expect(html).not.toContain(SECRET);
    expect(html).not.toContain(tmp);
    expect(html).not.toContain('PRIVATE KEY');
  }, 90_000);

  test('a signed delivery posted to the channel reaches the app through smee-client and is handled', async () => {
    const channel = `${smee.base}/${'c0ffee'.padEnd(16, '0')}`;
    const prefix = `fn-test-proxy-${randomUUID().slice(0, 8)}`;
    nockInstallationToken();
    // The bot keeps an issue's attempt counter under its own fixed key prefix, not the queue's: an issue number of
    // this run's own, so a second run (or another file on this Redis database) starts from attempt 1.
    const issue = 100_000 + Math.floor(Math.random() * 900_000);
    nockPermission('Codertocat', 'admin');
    nock(GITHUB_API)
      .persist()
      .get(new RegExp(`/repos/Codertocat/Hello-World/issues/${issue}/comments`))
      .query(true)
      .reply(200, []);
    nock(GITHUB_API)
      .persist()
      .post(`/repos/Codertocat/Hello-World/issues/${issue}/comments`)
      .reply(201, { id: 77, html_url: `https://github.com/Codertocat/Hello-World/issues/${issue}#issuecomment-77` });
    const running = await app(
      registered({ WEBHOOK_PROXY_URL: channel, FROGNANO_QUEUE_PREFIX: prefix, FROGNANO_FAIR_SHARE: 'off' }),
    );
    await waitFor('the app on the channel', () => smee.listeners(channel) === 1, 20_000);

    const delivery = signed(labeledPayload({ issueNumber: issue }));
    expect(await smee.deliver(channel, delivery.headers, delivery.body)).toBe(200);
    const conn = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    const queue = createQueue(conn, { prefix });
    try {
      const job = await waitFor('the queued job', () => queue.getJob(`codertocat/hello-world#${issue}@1`), 20_000);
      expect(job!.data).toMatchObject({
        owner: 'Codertocat',
        repo: 'Hello-World',
        issueNumber: issue,
        trigger: 'label',
      });
      expect(github.requests).toContain('GET /repos/Codertocat/Hello-World/collaborators/Codertocat/permission');
      expect(running.output()).toMatch(
        /Forwarding http:\/\/127\.0\.0\.1:\d+\/c0ffee0000000000 to http:\/\/127\.0\.0\.1:\d+\/api\/github\/webhooks/,
      );
    } finally {
      await queue.obliterate({ force: true });
      for (const key of await conn.keys(`*#${issue}*`)) await conn.del(key);
      await queue.close();
      await conn.quit();
    }
  }, 90_000);
});
