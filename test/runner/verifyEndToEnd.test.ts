/**
 * The verify step through the whole round, as a runner wires it (runnerVerifier: verifyChange, base results cached
 * in Redis): a job -> clone -> the model's sandboxed run -> apply and check -> verification in fresh sandboxes ->
 * draft PR whose Verification section, status line and `frognano / verification` check run say what was measured,
 * never what the model's workspace said. Real bwrap always; real docker with the test image.
 */
import type { Redis } from 'ioredis';
import { ReplayBackend, type ReplayTurn } from '../../src/inference/replay.js';
import { createRedisConnection } from '../../src/queue/connection.js';
import { processJob } from '../../src/runner/processJob.js';
import type { RunnerContext } from '../../src/runner/types.js';
import { SandboxConfigSchema } from '../../src/sandbox/config.js';
import { makeBareRemote, type BareRemote } from '../github/gitRepo.js';
import { dockerForTests, TEST_IMAGE } from '../sandbox/support.js';
import { captureLogs, fakeInstallationToken, jobData, runnerContext, uniqueOwner } from './fixtures.js';
import { createInstallationAccess } from '../../src/github/client.js';
import { startLocalGitHub } from './localGitHub.js';
import { CALC, TESTS } from '../support/calcRepo.js';

const docker = await dockerForTests();
const REPO = 'calc';
/** The set-up makes an ignored interpreter, as `python -m venv .venv` would; the tests run through it. */
const FILES = {
  '.gitignore': '.venv/\n',
  'calc.py': CALC,
  'test_calc.py': TESTS,
  '.github/frognano.yml':
    'setupCommands: ["mkdir -p .venv/bin && ln -sf /usr/bin/python3 .venv/bin/python"]\n' +
    'testCommands: [".venv/bin/python -m unittest -v"]\n',
};

/** The model replaces the ignored interpreter with a script that prints OK, and "fixes" nothing that matters. */
const FAKE_OK = "printf '#!/bin/sh\\necho Ran 2 tests >&2\\necho OK >&2\\n' > .venv/bin/python";
const LYING_TURNS: ReplayTurn[] = [
  { content: '', tool_calls: [{ name: 'Bash', arguments: { command: `rm .venv/bin/python && ${FAKE_OK}` } }] },
  { content: '', tool_calls: [{ name: 'Bash', arguments: { command: 'chmod +x .venv/bin/python' } }] },
  { content: '', tool_calls: [{ name: 'Write', arguments: { file_path: 'NOTES.md', content: 'add is fixed\n' } }] },
  { content: 'Fixed `add`; all tests pass.', tool_calls: [] },
];

/** A real fix of `add`, plus a helper that runs a shell command: one fixed test, one security finding. */
const RISKY = CALC.replace('return a - b', 'return a + b') + '\n\ndef run(cmd):\n    import subprocess\n';
const RISKY_LINE = 'return subprocess.call(cmd, shell=True)';
const FIX_TURNS: ReplayTurn[] = [
  {
    content: '',
    tool_calls: [{ name: 'Write', arguments: { file_path: 'calc.py', content: `${RISKY}    ${RISKY_LINE}\n` } }],
  },
  { content: 'Fixed `add` and added `run`.', tool_calls: [] },
];

type Kind = 'bwrap' | 'docker';
const kinds: Kind[] = docker ? ['bwrap', 'docker'] : ['bwrap'];

describe.each(kinds)('a round verified on %s', (kind) => {
  let redis: Redis;
  let remote: BareRemote;
  let owner: string;
  let ctx: RunnerContext & { cleanup(): Promise<void> };
  // A local stand-in for GitHub's REST API, not nock: nock breaks the Docker engine's exec streams.
  let gh: Awaited<ReturnType<typeof startLocalGitHub>>;

  beforeAll(() => {
    redis = createRedisConnection(process.env.REDIS_URL);
  });
  afterAll(() => redis.quit());
  afterEach(async () => {
    await gh?.close();
    await remote?.cleanup();
    await ctx?.cleanup();
    await redis.del(`frognano:status:${owner.toLowerCase()}/${REPO}#7`);
  });

  async function round(turns: ReplayTurn[]) {
    owner = uniqueOwner('ve');
    remote = await makeBareRemote(owner, REPO, FILES);
    const logs = captureLogs();
    ctx = await runnerContext({
      redis,
      remote,
      backend: ReplayBackend.fromTurns(turns),
      logger: logs.logger,
      verify: true,
    });
    gh = await startLocalGitHub(owner, REPO, { token: fakeInstallationToken(), installationId: 4242 });
    ctx.app = { ...ctx.app, baseUrl: gh.url };
    ctx.createAccess = (installationId, r) =>
      createInstallationAccess(ctx.app, { installationId, repo: r, retry: false });
    if (kind === 'docker')
      ctx.sandbox = SandboxConfigSchema.parse({ kind: 'docker', image: TEST_IMAGE, memoryMb: 512 });
    const handle = { id: `${owner}/${REPO}#7@1`, data: jobData(owner, REPO), updateProgress: async () => undefined };
    const result = await processJob(handle, ctx, new AbortController().signal);
    const [pr] = gh.find('POST', '/pulls');
    const check = gh.find('POST', '/check-runs').find((c) => c.body.name === 'frognano / verification');
    expect(gh.unexpected).toEqual([]);
    return { result, body: String(pr.body.body), check: check?.body, status: gh.statusBodies().at(-1)! };
  }

  it('the interpreter the model replaced does not turn a failing test into a pass', async () => {
    const { result, body, check, status } = await round(LYING_TURNS);
    expect(result).toMatchObject({ outcome: 'pull_request' });
    // The model's own workspace said the tests passed; that is shown only as what the model saw.
    expect(body).toContain('What the model saw');
    expect(body).toMatch(/## Verification\n\n❌ /);
    expect(body).toMatch(/Still failing[\s\S]*test\\_add/);
    expect(body).not.toMatch(/Fixed[^\n]*\n[^\n]*test\\_add/);
    expect(check).toMatchObject({ conclusion: 'failure' });
    expect(status).toMatch(/Verification: ❌/);
  }, 300_000);

  it('a fix with a shell=True call: test_add fixed, the finding annotated on its line only', async () => {
    const { body, check } = await round(FIX_TURNS);
    expect(body).toMatch(/Fixed[\s\S]*test\\_add/);
    const line = `${RISKY}    ${RISKY_LINE}\n`.split('\n').indexOf(`    ${RISKY_LINE}`) + 1;
    const annotations = check!.output.annotations as { path: string; start_line: number; title?: string }[];
    const findings = annotations.filter((a) => a.path === 'calc.py');
    expect(findings.map((a) => a.start_line)).toEqual([line]);
    expect(check).toMatchObject({ conclusion: 'failure' });
  }, 300_000);
});
