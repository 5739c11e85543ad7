/**
 * A follow-up round's ask to the model's first request, through the real runner path: processJob (token from a
 * stand-in GitHub on 127.0.0.1, the pull request read, the base and head cloned through the git mirror, the set-up
 * snapshot key, the workspace copy, the sandbox, the set-up restored or run) until the scripted model's first
 * request. The repository has a history (`commits`, default 2000, plus a 20 MB blob) and a slow set-up
 * (`sleep <SLEEP> && python3 -m venv .venv`, SLEEP default 20 s) that writes a marker the model's first tool call
 * reads back. Series, interleaved on each sandbox kind:
 *   none: no git mirror, no snapshot cache (a shallow clone, the set-up runs every round)
 *   warm: the mirror and the snapshot cache, after a first attempt stored the set-up (what every later round sees)
 * Phases (medians): fetch and clone (the mirror's own timings, base and head together), the rest before the sandbox
 * (token, pull request, config, key, workspace copy), sandbox start, the set-up or its restore (the sandbox's exec
 * calls), and the rest until the first request. Prints a table; asserts nothing.
 *   npx tsx bench/follow-up-start.ts [runs=3] [commits=2000]   (SLEEP=20; REDIS_URL; FROGNANO_SANDBOX_IMAGE)
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createInstallationAccess } from '../src/github/client.js';
import { GitMirrorCache, type MirrorCloneOptions } from '../src/github/gitMirror.js';
import { ReplayBackend } from '../src/inference/replay.js';
import type { ModelBackend } from '../src/inference/types.js';
import { SetupSnapshotCache } from '../src/leaf/setupSnapshot.js';
import type { JobData } from '../src/queue/schema.js';
import { processJob } from '../src/runner/processJob.js';
import { checkBwrap, checkDocker } from '../src/sandbox/check.js';
import { BwrapSandboxConfigSchema, DockerSandboxConfigSchema, SandboxConfigSchema } from '../src/sandbox/config.js';
import { createSandbox } from '../src/sandbox/index.js';
import type { Sandbox } from '../src/sandbox/types.js';
import type { BareRemote } from '../test/github/gitRepo.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext } from '../test/runner/fixtures.js';
import { startLocalGitHub } from '../test/runner/localGitHub.js';
import { summarize } from './lib.js';

const runs = Number(process.argv[2] ?? 3);
const commits = Number(process.argv[3] ?? 2000);
const sleep = Number(process.env.SLEEP ?? 20);
const image = process.env.FROGNANO_SANDBOX_IMAGE ?? 'frognano-sandbox:test';
const OWNER = 'bench';
const REPO = 'follow';
const HEAD = 'frognano/issue-7';
const PR = 5;
const SETUP = `sleep ${sleep} && python3 -m venv .venv && date +%s%N > .venv/SETUP_MARKER`;
const CONFIG = `setupCommands: [${JSON.stringify(SETUP)}]\nfollowUp:\n  maxRounds: 50\n`;

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@x',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};
const sh = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });

/** A bare remote with `commits` commits of history (git fast-import), a 20 MB blob, and the bot's branch on top. */
async function fixtureRemote(): Promise<BareRemote & { mb: number }> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'fn-bench-follow-'));
  const bare = path.join(root, OWNER, `${REPO}.git`);
  await fs.mkdir(bare, { recursive: true });
  sh(root, 'init', '-q', '--bare', '--initial-branch=main', bare);
  const chunks: Buffer[] = [];
  const data = (s: string | Buffer) => {
    const b = Buffer.isBuffer(s) ? s : Buffer.from(s);
    chunks.push(Buffer.from(`data ${b.length}\n`), b, Buffer.from('\n'));
  };
  const files = (): Record<string, string | Buffer> => ({
    '.gitignore': '.venv/\n',
    'requirements.txt': 'six==1.16.0\n',
    '.github/frognano.yml': CONFIG,
    'assets/blob.bin': randomBytes(20 * 1024 ** 2),
  });
  for (let i = 1; i <= commits + 1; i++) {
    chunks.push(Buffer.from(`commit refs/heads/main\ncommitter b <b@x> ${1_700_000_000 + i} +0000\n`));
    data(`commit ${i}`);
    const content = `# module ${i % 200}, revision ${i}\n${'x = 1\n'.repeat(50 + (i % 30))}`;
    chunks.push(Buffer.from(`M 100644 inline src/mod_${i % 200}.py\n`));
    data(content);
    if (i === commits + 1) {
      for (const [p, c] of Object.entries(files())) {
        chunks.push(Buffer.from(`M 100644 inline ${p}\n`));
        data(c);
      }
    }
  }
  chunks.push(Buffer.from(`reset refs/heads/${HEAD}\nfrom refs/heads/main\n\n`));
  execFileSync('git', ['fast-import', '--quiet'], { cwd: bare, input: Buffer.concat(chunks), env: gitEnv });
  sh(bare, 'gc', '-q');
  const mb = Number(sh(bare, 'count-objects', '-v').match(/size-pack: (\d+)/)![1]) / 1024;
  return { root, baseUrl: `file://${root}`, bare, mb, cleanup: () => fs.rm(root, { recursive: true, force: true }) };
}

interface Marks {
  t0: number;
  fetchMs: number;
  cloneMs: number;
  sandboxStart?: number;
  sandboxReady?: number;
  execMs: number;
  first?: number;
  sawMarker?: string;
}

/** The scripted model: reads the set-up's marker, changes one file, finishes; notes its first request's time. */
function backend(m: Marks, round: number): ModelBackend {
  const replay = ReplayBackend.fromTurns([
    { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'cat .venv/SETUP_MARKER' } }] },
    { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'NOTES.md', content: `round ${round}\n` } }] },
    { content: 'Done.', tool_calls: [] },
  ]);
  return {
    info: () => replay.info(),
    generate: (messages, tools, o) => {
      m.first ??= performance.now();
      return replay.generate(messages, tools, o);
    },
  };
}

class TimedMirror extends GitMirrorCache {
  marks?: Marks;
  override async clone(o: MirrorCloneOptions) {
    const r = await super.clone(o);
    if (this.marks) {
      this.marks.fetchMs += r.timings.fetchMs;
      this.marks.cloneMs += r.timings.cloneMs;
    }
    return r;
  }
}

/** The sandbox as the runner makes it, its start timed and its exec calls before the model's first request summed. */
function timedSandboxes(m: () => Marks) {
  return async (cfg: Parameters<typeof createSandbox>[0], ws: string): Promise<Sandbox> => {
    const marks = m();
    marks.sandboxStart ??= performance.now();
    const sb = await createSandbox(cfg, ws);
    marks.sandboxReady ??= performance.now();
    const exec = sb.exec.bind(sb);
    sb.exec = async (command, o) => {
      const t = performance.now();
      const r = await exec(command, o);
      if (marks.first === undefined) marks.execMs += performance.now() - t;
      return r;
    };
    return sb;
  };
}

type Mode = 'none' | 'warm';

async function benchKind(kind: 'bwrap' | 'docker', remote: BareRemote, redis: Redis): Promise<void> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'fn-bench-follow-caches-'));
  const mirror = new TimedMirror({ dir: path.join(root, 'git'), maxBytes: 8 * 1024 ** 3 });
  const snapshots = new SetupSnapshotCache({
    dir: path.join(root, 'setup'),
    maxBytes: 8 * 1024 ** 3,
    maxSnapshotBytes: 1024 ** 3,
  });
  const sandbox =
    kind === 'docker'
      ? SandboxConfigSchema.parse({ kind: 'docker', image, memoryMb: 1024 })
      : SandboxConfigSchema.parse({ kind: 'bwrap', defaultTimeoutMs: 120_000 });
  let round = 0;
  let marks: Marks = { t0: 0, fetchMs: 0, cloneMs: 0, execMs: 0 };

  async function job(mode: Mode, data: JobData) {
    marks = { t0: 0, fetchMs: 0, cloneMs: 0, execMs: 0 };
    const logs = captureLogs();
    const ctx = await runnerContext({ redis, remote, backend: backend(marks, round), logger: logs.logger });
    const gh = await startLocalGitHub(OWNER, REPO, {
      token: fakeInstallationToken(),
      installationId: 4242,
      prNumber: PR,
      pull: { remote, head: HEAD, base: 'main' },
    });
    try {
      ctx.app = { ...ctx.app, baseUrl: gh.url };
      ctx.createAccess = (id, r) => createInstallationAccess(ctx.app, { installationId: id, repo: r, retry: false });
      ctx.sandbox = sandbox;
      ctx.createSandbox = timedSandboxes(() => marks);
      ctx.gitCache = mode === 'warm' ? mirror : undefined;
      ctx.setupCache = mode === 'warm' ? snapshots : undefined;
      mirror.marks = marks;
      const handle = { id: `${OWNER}/${REPO}#${data.issueNumber}@${round}`, data, updateProgress: async () => {} };
      marks.t0 = performance.now();
      const result = await processJob(handle, ctx, new AbortController().signal).catch((e: unknown) => {
        console.error(logs.lines.slice(-15).join(''));
        throw e;
      });
      if (result.outcome !== 'pull_request')
        throw new Error(`round ended ${result.outcome}: ${JSON.stringify(result)}`);
      if (process.env.DEBUG) for (const l of logs.lines) console.error(`  ${mode}: ${l.trim().slice(0, 400)}`);
      // What the model's first tool call (`cat .venv/SETUP_MARKER`) printed.
      const t = JSON.parse(await fs.readFile(result.trajectoryPath!, 'utf8'));
      marks.sawMarker = /STDOUT:\n(\d+)\n/.exec(String(t.steps?.[0]?.observations?.[0]?.observation))?.[1];
      return { ...marks };
    } finally {
      await gh.close();
      await ctx.cleanup();
      await redis.del(`frognano:status:${OWNER}/${REPO}#${data.issueNumber}`, `frognano:status:${OWNER}/${REPO}#${PR}`);
    }
  }

  const followUp = (): JobData => {
    round += 1;
    const headSha = sh(remote.bare, 'rev-parse', `refs/heads/${HEAD}`).trim();
    return jobData(OWNER, REPO, {
      trigger: 'comment',
      followUp: {
        pullNumber: PR,
        headBranch: HEAD,
        headSha,
        baseBranch: 'main',
        round,
        feedback: '/frognano add a note',
        inlineComments: [],
        omittedComments: 0,
        source: 'comment',
      },
    });
  };

  try {
    // The first attempt (issue 8, its own branch) fills the mirror and stores the set-up snapshot.
    round += 1;
    const stored = (await job('warm', jobData(OWNER, REPO, { issueNumber: 8 }))).sawMarker;
    const series: Record<Mode, Marks[]> = { none: [], warm: [] };
    let markers = true;
    for (let i = 0; i < runs; i++) {
      for (const mode of ['none', 'warm'] as const) {
        const m = await job(mode, followUp());
        series[mode].push(m);
        // warm: the first attempt's set-up product itself (restored, not re-run); none: a fresh set-up's.
        markers &&= stored !== undefined && m.sawMarker !== undefined && (mode === 'warm') === (m.sawMarker === stored);
      }
    }
    for (const mode of ['none', 'warm'] as const) print(kind, mode, series[mode], markers);
  } finally {
    await fs.rm(root, { recursive: true, force: true });
  }
}

function print(kind: string, mode: Mode, ms: Marks[], markers: boolean): void {
  const med = (f: (m: Marks) => number) => (summarize(ms.map(f)).median / 1000).toFixed(2).padStart(6);
  const total = (m: Marks) => m.first! - m.t0;
  const before = (m: Marks) => m.sandboxStart! - m.t0 - m.fetchMs - m.cloneMs;
  const start = (m: Marks) => m.sandboxReady! - m.sandboxStart!;
  const rest = (m: Marks) => m.first! - m.sandboxReady! - m.execMs;
  console.log(
    `${kind.padEnd(6)} | ${mode} | ${med(total)} s (min ${(summarize(ms.map(total)).min / 1000).toFixed(2)}) | ` +
      `${med((m) => m.fetchMs)} | ${med((m) => m.cloneMs)} | ${med(before)} | ${med(start)} | ${med((m) => m.execMs)} | ` +
      `${med(rest)} | ${markers ? 'ok' : 'MISSING'}`,
  );
}

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const remote = await fixtureRemote();
try {
  console.log(`set-up: ${SETUP}; history: ${commits} commits, ${remote.mb.toFixed(1)} MB packed`);
  console.log(`runs per series: ${runs} (interleaved); CPUs ${os.cpus().length}, load ${os.loadavg()[0].toFixed(1)}`);
  console.log(
    'kind   | mode | ask → first request     |  fetch |  clone | other before sandbox | sandbox start | set-up/restore | rest | model sees the set-up',
  );
  const kinds = (process.env.KINDS ?? 'bwrap,docker').split(',');
  const bw = await checkBwrap(BwrapSandboxConfigSchema.parse({ kind: 'bwrap' }));
  if (!kinds.includes('bwrap')) console.log('bwrap  | not asked for');
  else if (bw.ok) await benchKind('bwrap', remote, redis);
  else console.log(`bwrap  | skipped: ${bw.message}`);
  const dk = await checkDocker(DockerSandboxConfigSchema.parse({ kind: 'docker', image }));
  if (!kinds.includes('docker')) console.log('docker | not asked for');
  else if (dk.ok) await benchKind('docker', remote, redis);
  else console.log(`docker | skipped: ${dk.message}`);
  console.log(`load after: ${os.loadavg()[0].toFixed(1)}`);
} finally {
  await remote.cleanup();
  await redis.quit();
}
