import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Octokit } from '@octokit/rest';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { Redis } from 'ioredis';
import { parseTrustedProxies } from '../../src/app/runPages/origin.js';
import { collaboratorPermissionLookup } from '../../src/app/runPages/permission.js';
import { redisSessionVersions } from '../../src/app/runPages/sessions.js';
import { createGitHubSignIn } from '../../src/app/runPages/signIn.js';
import { createRunPagesHandler } from '../../src/runs/http.js';
import { LocalObjectStore } from '../../src/runs/localObjectStore.js';
import { TrajectoryStore } from '../../src/runs/trajectoryStore.js';
import { CLIENT_ID, CLIENT_SECRET, INSTALLATION_TOKEN, startFakeGitHub, type FakeGitHub } from './fakeGitHub.js';
import { makeRound } from './fixture.js';

/**
 * The run page in a real browser (Debian's chromium through puppeteer-core): sign-in through the GitHub stand-in,
 * a 100-step round, the round selector, j/k, the filter, no access = 404, the cookie's flags, and screenshots in
 * both themes under test-output/ (git-ignored) for a person to look at.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUT = path.resolve('test-output');
// Page scripts are passed as text: this project's TypeScript has no DOM types.
// In CI (CI=true) a missing browser fails the run instead of skipping it, as the docker sandbox tests do.
const run = existsSync(CHROMIUM) || process.env.CI === 'true' ? describe : describe.skip;
if (!existsSync(CHROMIUM))
  console.warn(`runPage.browser.test: no browser at ${CHROMIUM} (apt-get install -y chromium); skipped`);

let dir: string;
let github: FakeGitHub;
let app: Server;
let base: string;
let browser: Browser;
let redis: Redis;
const alerts: string[] = [];
const consoleErrors: string[] = [];
const QUIET = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'frognano-page-'));
  await mkdir(OUT, { recursive: true });
  github = await startFakeGitHub();
  github.roles = { alice: 'read' };
  redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  const store = new TrajectoryStore(new LocalObjectStore(dir));
  await store.putRound(makeRound({ round: 0 }));
  await store.putRound(makeRound({ round: 1, steps: 30, bytes: 200_000 }));
  const gate = createGitHubSignIn({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    sessionSecret: randomBytes(32).toString('hex'),
    sessions: redisSessionVersions(redis),
    trustedProxies: parseTrustedProxies('127.0.0.1'),
    webUrl: github.url,
    apiUrl: github.url,
    permission: collaboratorPermissionLookup(
      async () => new Octokit({ baseUrl: github.url, auth: INSTALLATION_TOKEN, log: QUIET }),
    ),
  });
  const handler = createRunPagesHandler({ source: store, gate, githubUrl: 'https://github.com' });
  app = createServer((req, res) => {
    if (!handler(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  if (existsSync(CHROMIUM)) {
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => {
    app?.closeAllConnections();
    app?.close(() => r());
  });
  await github?.close();
  await redis?.quit();
  await rm(dir, { recursive: true, force: true });
});

async function signedInPage(login: string): Promise<Page> {
  github.signInAs = login;
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  // A CSP violation (an inline script or style the policy blocked) shows as a console error.
  page.on('console', (m) => void (m.type() === 'error' && !/404/.test(m.text()) && consoleErrors.push(m.text())));
  page.on('dialog', async (d) => {
    alerts.push(d.message());
    await d.dismiss();
  });
  return page;
}

run('run page in a browser', () => {
  let page: Page;

  it('signs in through GitHub and shows every step of a 100-step round', async () => {
    page = await signedInPage('alice');
    const res = await page.goto(`${base}/runs/octo/demo/12/0`, { waitUntil: 'load' });
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${base}/runs/octo/demo/12/0`);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(res?.headers()['cache-control']).toBe('private, no-store');
    expect(await page.$$eval('li.step', (els) => els.length)).toBe(100);
    expect(await page.$eval('li.step:last-child .step-n', (e) => e.textContent)).toBe('Step 100');
    expect(await page.$eval('h1', (e) => e.textContent)).toBe('Fix the parser <b>now</b>');
    expect(await page.$$eval('pre.diff .add', (els) => els.length)).toBeGreaterThan(20);
    expect(await page.$eval('.user', (e) => e.textContent)).toContain('alice');
    expect(alerts).toEqual([]); // the hostile <script> and onerror texts stayed text
    expect(consoleErrors).toEqual([]);
    expect(github.permissionAsks).toContain('octo/demo/alice');
  });

  it('sets a signed, httpOnly, SameSite=Lax session cookie with a short life', async () => {
    const cookies = await page.browserContext().cookies();
    const session = cookies.find((c) => c.name === 'frognano_session')!;
    expect(session).toBeDefined();
    expect(session.httpOnly).toBe(true);
    expect(session.sameSite).toBe('Lax');
    expect(session.secure).toBe(false); // plain http here; the unit tests check Secure under https
    expect(session.path).toBe('/runs');
    expect(session.expires - Date.now() / 1000).toBeLessThanOrEqual(3600);
    expect(session.value).not.toContain('ghu_'); // no token in the cookie
  });

  it('writes screenshots in the light and dark themes', async () => {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    await page.screenshot({ path: path.join(OUT, 'run-page-light.png') });
    await page.evaluate("document.getElementById('step-2').scrollIntoView()");
    await page.screenshot({ path: path.join(OUT, 'run-page-light-edit.png') });
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: path.join(OUT, 'run-page-dark.png') });
    await page.evaluate("document.getElementById('step-2').scrollIntoView()");
    await page.screenshot({ path: path.join(OUT, 'run-page-dark-edit.png') });
    const bg = await page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(bg).toBe('rgb(13, 17, 23)');
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
  });

  it('moves between steps with j and k, and filters steps by their text', async () => {
    await page.evaluate('window.scrollTo(0, 0)');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    expect(await page.$eval('li.step.current', (e) => e.id)).toBe('step-2');
    await page.keyboard.press('/');
    await page.keyboard.type('output of step 57 ');
    expect(await page.$$eval('li.step:not([hidden])', (els) => els.map((e) => e.id))).toEqual(['step-57']);
    await page.click('#filter', { count: 3 });
    await page.keyboard.press('Backspace');
    expect(await page.$$eval('li.step:not([hidden])', (els) => els.length)).toBe(100);
  });

  it('switches rounds with the round selector', async () => {
    expect(await page.$eval('a.round[aria-current=page]', (e) => e.getAttribute('data-round'))).toBe('0');
    await Promise.all([page.waitForNavigation(), page.click('a.round[data-round="1"]')]);
    expect(page.url()).toBe(`${base}/runs/octo/demo/12/1`);
    expect(await page.$eval('a.round[aria-current=page]', (e) => e.getAttribute('data-round'))).toBe('1');
    expect(await page.$$eval('li.step', (els) => els.length)).toBe(30);
    expect(await page.$eval('#step-1 .said', (e) => e.textContent)).toContain('(round 1)');
    // The run's page without a round shows its latest.
    await page.goto(`${base}/runs/octo/demo/12`);
    expect(await page.$eval('a.round[aria-current=page]', (e) => e.getAttribute('data-round'))).toBe('1');
  });

  it('reads without JavaScript', async () => {
    const plain = await signedInPage('alice');
    await plain.setJavaScriptEnabled(false);
    const res = await plain.goto(`${base}/runs/octo/demo/12/0`);
    expect(res?.status()).toBe(200);
    expect(await plain.$$eval('li.step', (els) => els.length)).toBe(100);
    await plain.browserContext().close();
  });

  it('answers a user without read access with the same 404 as a run that does not exist', async () => {
    const missing = await page.goto(`${base}/runs/octo/demo/999`);
    expect(missing?.status()).toBe(404);
    const missingText = await page.$eval('body', (e) => e.innerHTML);
    const mallory = await signedInPage('mallory');
    const denied = await mallory.goto(`${base}/runs/octo/demo/12/0`);
    expect(denied?.status()).toBe(404);
    expect(await mallory.$eval('body', (e) => e.innerHTML)).toBe(missingText);
    expect(github.permissionAsks).toContain('octo/demo/mallory');
    await mallory.browserContext().close();
  });
});
