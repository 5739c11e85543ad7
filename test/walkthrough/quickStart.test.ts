/**
 * README.md's quick start, followed as written on a fresh copy of the repository, so the README cannot drift from what
 * works: the commands come from its `bash` block, in its order. `npm start` and `npm run runner` run as the README has
 * them (npm scripts, child processes, a clean environment and an empty `.env`), and the `echo … >> .env` lines run in
 * a shell. What cannot run here is replaced by a stand-in, each a real server or program on this machine:
 *   git clone, npm ci   -> a copy of the working tree with node_modules linked in
 *   redis-server        -> the test Redis (a queue prefix of the test's own)
 *   github.com          -> test/support/gitHubStandIn.ts (the manifest conversion, the REST API the app and the
 *                          runner call) and a bare git repository the runner clones and pushes (FROGNANO_GIT_BASE_URL)
 *   smee.io             -> test/support/smeeStandIn.ts (FROGNANO_SMEE_URL)
 *   model pull, vllm    -> the scripted model (FROGNANO_BACKEND=replay; the environment wins over the .env lines)
 *   docker build        -> the bubblewrap sandbox (FROGNANO_SANDBOX=bwrap)
 * The story: setup page -> registration (manifest conversion) -> .env written -> restart -> the `/` page -> runner ->
 * installation and `issues.labeled` (label frognano) delivered signed through the channel -> a draft pull request.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import nock from 'nock';
import { parseEnv } from 'node:util';
import { Redis } from 'ioredis';
import { example, labeledPayload, nockPermission, testPrivateKey } from '../app/helpers.js';
import { gitIn, makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { recordGitHub } from '../runner/githubRecorder.js';
import { recordPullRequest } from '../runner/pullRequestRecorder.js';
import { fakeInstallationToken } from '../runner/fixtures.js';
import { freePort, ROOT, startChildApp, type ChildApp } from '../support/appProcess.js';
import { GITHUB_API, startGitHubStandIn, type GitHubStandIn } from '../support/gitHubStandIn.js';
import { startSmeeStandIn, type SmeeStandIn } from '../support/smeeStandIn.js';
import { waitFor } from '../support/waitFor.js';

const OWNER = 'Codertocat';
const REPO = 'Hello-World';
const INSTALLATION_ID = 4242;
/**
 * The bot keeps its per-issue state (attempt counters, the status comment) under a fixed Redis prefix, not the queue's:
 * an issue number of this run's own keeps a second run, or another test on the same Redis, from meeting it.
 */
const ISSUE = 100_000 + Math.floor(Math.random() * 900_000);
const BRANCH = `frognano/issue-${ISSUE}`;

/** The README's quick start: the lines of its first `bash` block. */
function quickStartLines(readme: string): string[] {
  const section = readme.split(/^## Quick start/m)[1]?.split(/^## /m)[0] ?? '';
  return (/```bash\n([\s\S]*?)```/.exec(section)?.[1] ?? '').split('\n');
}

/** A line's command: its comment and surrounding blanks dropped. */
const commandOf = (line: string) => line.replace(/(^|\s)#.*$/, '').trim();

/** The working tree as a clone has it (tracked and new files, none that git ignores), node_modules linked in. */
function freshCopy(into: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && existsSync(join(ROOT, f)));
  for (const f of files) {
    mkdirSync(dirname(join(into, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(into, f));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(into, 'node_modules'));
}

const children: ChildApp[] = [];
let tmp: string;
let smee: SmeeStandIn;
let github: GitHubStandIn;
let remote: BareRemote;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'fn-walkthrough-'));
  // The sandbox user must reach the runner's workspaces under it (the runner refuses a directory it cannot enter).
  chmodSync(tmp, 0o755);
  smee = await startSmeeStandIn();
  github = await startGitHubStandIn();
  // `master`: the example payloads' default branch.
  remote = await makeBareRemote(
    OWNER,
    REPO,
    { 'README.md': '# Hello World\n\nRemember to comitt often.\n' },
    { branch: 'master' },
  );
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
});

afterAll(async () => {
  for (const c of children.splice(0)) await c.stop();
  await smee?.close();
  await github?.close();
  await remote?.cleanup();
  nock.cleanAll();
  rmSync(tmp, { recursive: true, force: true });
});

describe("README.md's quick start on a fresh copy", () => {
  test('git clone … npm start (register, install) … npm run runner … label: a draft pull request', async () => {
    const started = Date.now();
    const lines = quickStartLines(readFileSync(join(ROOT, 'README.md'), 'utf8')).filter((l) => commandOf(l));
    const commands = lines.map(commandOf);
    const at = (prefix: string, from = 0) => commands.findIndex((c, i) => i >= from && c.startsWith(prefix));
    const setupStart = at('npm start');
    const appStart = at('npm start', setupStart + 1);
    const runnerStart = at('npm run runner');
    // The order a user follows.
    expect([at('git clone'), at('npm ci'), at('redis-server'), setupStart, appStart, runnerStart]).toEqual(
      [...[at('git clone'), at('npm ci'), at('redis-server'), setupStart, appStart, runnerStart]].sort((a, b) => a - b),
    );
    expect(Math.min(at('git clone'), at('npm ci'), setupStart, appStart, runnerStart)).toBeGreaterThanOrEqual(0);
    expect(at('npm run frognano -- model pull')).toBeGreaterThan(appStart);

    const dir = join(tmp, 'frognano-bot');
    freshCopy(dir);
    expect(existsSync(join(dir, '.env'))).toBe(false);
    const prefix = `fn-test-walk-${randomUUID().slice(0, 8)}`;
    // What points the app at the stand-ins: GitHub (Enterprise settings), smee, and a queue prefix of this test's own.
    const appEnv = {
      FROGNANO_SMEE_URL: smee.base,
      GHE_HOST: github.host,
      GHE_PROTOCOL: 'http',
      FROGNANO_QUEUE_PREFIX: prefix,
    };
    const run = (line: string) => line.split(/\s+/);

    // 1. `npm start` without credentials: the setup page, which opened a channel and registers it as the hook URL.
    const setup = await startChildApp({ cwd: dir, env: appEnv, command: run(commands[setupStart]!) });
    children.push(setup);
    const root = await fetch(`${setup.base}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/probot']);
    const html = await (await fetch(`${setup.base}/probot`)).text();
    // The button the README's `npm start` line names.
    const button = /"(Register[^"]*)"/.exec(lines[setupStart]!)?.[1];
    expect(html).toContain(`>${button}</button>`);
    const manifest = JSON.parse(/name="manifest" id="manifest" value='([^']+)'/.exec(html)![1]!);
    const channel = smee.channels[0]!;
    expect(manifest.hook_attributes.url).toBe(channel);

    // 2. "Register a GitHub App": GitHub redirects back with a code, which the app converts into the App's credentials.
    const pem = testPrivateKey();
    const webhookSecret = `whsec-${randomUUID()}`;
    nock(GITHUB_API).post('/app-manifests/walkthrough-code/conversions').reply(201, {
      id: 4711,
      slug: 'frognano-walkthrough',
      name: 'frognano walkthrough',
      client_id: 'Iv1.walkthrough',
      client_secret: 'walkthrough-client-secret-0123456789abcdef',
      webhook_secret: webhookSecret,
      pem,
      html_url: 'https://github.com/apps/frognano-walkthrough',
    });
    const back = await fetch(`${setup.base}/probot/setup?code=walkthrough-code`, { redirect: 'manual' });
    expect([back.status, back.headers.get('location')]).toEqual([
      302,
      'https://github.com/apps/frognano-walkthrough/installations/new',
    ]);
    const env = parseEnv(readFileSync(join(dir, '.env'), 'utf8'));
    expect(env).toMatchObject({ APP_ID: '4711', WEBHOOK_SECRET: webhookSecret, WEBHOOK_PROXY_URL: channel });
    expect(env.PRIVATE_KEY!.trim()).toBe(pem.trim());
    await setup.stop();

    // 3. `npm start` again: the App, receiving through the channel; `/` says what is configured and what is next.
    nock(GITHUB_API).persist().get('/app').reply(200, {
      id: 4711,
      slug: 'frognano-walkthrough',
      name: 'frognano walkthrough',
      html_url: 'https://github.com/apps/frognano-walkthrough',
    });
    const app = await startChildApp({ cwd: dir, env: appEnv, command: run(commands[appStart]!) });
    children.push(app);
    await waitFor('the app on the channel', () => smee.listeners(channel) === 1, 30_000);
    const page = (await (await fetch(`${app.base}/`)).text()).replace(/<[^>]+>/g, '');
    expect(page).toContain('frognano walkthrough: id 4711, slug frognano-walkthrough');
    expect(page).toContain(`Webhook channel: ${channel}, forwarded to /api/github/webhooks`);
    expect(page).toContain('Redis: reachable');
    expect((await fetch(`${app.base}/readyz`)).status).toBe(200);

    // 4. The runner's model lines go into .env; then `npm run runner` (the scripted model and bwrap win: environment).
    for (const line of commands.filter((c) => c.startsWith('echo ') && c.endsWith('>> .env')))
      execFileSync('sh', ['-c', line], { cwd: dir });
    expect(parseEnv(readFileSync(join(dir, '.env'), 'utf8'))).toMatchObject({
      FROGNANO_BACKEND: 'openai',
      APP_ID: '4711',
    });
    const turns = join(tmp, 'turns.json');
    writeFileSync(
      turns,
      JSON.stringify({
        turns: [
          { content: '', tool_calls: [{ name: 'Read', arguments: { file_path: 'README.md' } }] },
          {
            content: '',
            tool_calls: [
              { name: 'Edit', arguments: { file_path: 'README.md', old_string: 'comitt', new_string: 'commit' } },
            ],
          },
          { content: 'Fixed the spelling of "commit" in README.md.', tool_calls: [] },
        ],
      }),
    );
    const gh = recordGitHub(OWNER, REPO, {
      token: fakeInstallationToken(),
      installationId: INSTALLATION_ID,
      prNumber: 12,
    });
    recordPullRequest(remote, OWNER, REPO, {
      number: 12,
      head: BRANCH,
      base: 'master',
      permissions: { Codertocat: 'admin' },
    });
    nockPermission('Codertocat', 'admin').persist();
    const opsPort = await freePort();
    const runner = await startChildApp({
      cwd: dir,
      port: opsPort,
      command: run(commands[runnerStart]!),
      env: {
        FROGNANO_QUEUE_PREFIX: prefix,
        FROGNANO_BACKEND: 'replay',
        FROGNANO_REPLAY_FILE: turns,
        FROGNANO_SANDBOX: 'bwrap',
        FROGNANO_GITHUB_API_URL: `${github.base}/api/v3`,
        FROGNANO_GIT_BASE_URL: remote.baseUrl,
        FROGNANO_OPS_PORT: String(opsPort),
        // Its workspaces, git mirrors and set-up snapshots in this test's directory, removed with it.
        FROGNANO_WORK_DIR: join(tmp, 'runner', 'work'),
      },
    });
    children.push(runner);

    // 5. GitHub: the App installed, then a maintainer labels an issue `frognano`; both through the channel, signed.
    const deliver = async (event: string, payload: unknown) => {
      const body = JSON.stringify(payload);
      const signature = `sha256=${createHmac('sha256', webhookSecret).update(body).digest('hex')}`;
      const headers = { 'x-github-event': event, 'x-github-delivery': randomUUID(), 'x-hub-signature-256': signature };
      expect(await smee.deliver(channel, headers, body)).toBe(200);
    };
    const installed = example('installation', 'created');
    installed.installation.id = INSTALLATION_ID;
    await deliver('installation', installed);
    await deliver('issues', labeledPayload({ issueNumber: ISSUE }));

    // 6. The draft pull request, with the model's edit on its branch.
    const draft = () => {
      if (runner.output().includes('"msg":"job failed"')) return 'the job failed';
      const found = gh.find('POST', `/repos/${OWNER}/${REPO}/pulls`);
      return found.length ? found : undefined;
    };
    const tail = (c: ChildApp) => c.output().split('\n').slice(-25).join('\n');
    const answer = await waitFor('the draft pull request', draft, 120_000).catch((err: Error) => err.message);
    if (typeof answer === 'string') {
      throw new Error(
        `${answer}\nGitHub saw: ${github.requests.join(', ')}\napp:\n${tail(app)}\nrunner:\n${tail(runner)}`,
      );
    }
    const pulls = answer;
    expect(pulls[0]!.body).toMatchObject({ draft: true, head: BRANCH, base: 'master' });
    const head = gitIn(remote.bare, 'rev-parse', `refs/heads/${BRANCH}`).trim();
    expect(gitIn(remote.bare, 'show', `${head}:README.md`)).toBe('# Hello World\n\nRemember to commit often.\n');
    // The status comment the app wrote first, through the same stand-in.
    expect(gh.statusBodies()[0]).toMatch(/queued/i);
    console.log(`quick start walkthrough: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const conn = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    try {
      const mine = [...(await conn.keys(`${prefix}*`)), ...(await conn.keys(`*#${ISSUE}*`))];
      for (const key of mine) await conn.del(key);
    } finally {
      await conn.quit();
    }
  }, 300_000);
});
