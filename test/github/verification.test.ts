import nock from 'nock';
import { ProbotOctokit } from 'probot';
import { VERIFICATION_CHECK_NAME, verificationSection, verificationStatusLine } from '../../src/github/verification.js';
import { publishVerificationCheck, verificationCheckOutput } from '../../src/github/verificationCheck.js';
import { listCheckRuns } from '../../src/github/checkRuns.js';
import { outcomeOfVerdict, verificationLine } from '../../src/verify/outcome.js';
import { commandRun, mixedVerdict, side } from '../support/verdicts.js';

const API = 'https://api.github.com';
const octokit = new ProbotOctokit({
  auth: { token: 'ghs_test' },
  retry: { enabled: false },
  throttle: { enabled: false },
});
const modelTests = [{ command: 'pytest -q', exitCode: 0, outputTail: 'all green', timedOut: false }];

describe('the Verification section of the pull request description', () => {
  it('names the fixed test and the regression, with the patched output tail; the model run only as what it saw', () => {
    const md = verificationSection({ state: 'verified', verdict: mixedVerdict() }, modelTests).join('\n');
    expect(md).toMatch(/^## Verification$/m);
    expect(md).not.toMatch(/^## Tests$/m);
    expect(md).toContain('❌ **1 test fixed\\, 1 regression\\: tests');
    expect(md).toContain(
      '**Regressions (1)**\n\n- tests\\/test\\_math\\.py\\:\\:test\\_sub (tests\\/test\\_math\\.py\\:12): passed → failed',
    );
    expect(md).toContain('**Fixed (1)**\n\n- tests\\/test\\_math\\.py\\:\\:test\\_add: failed → passed');
    expect(md).toContain('| pytest \\-q | ❌ exit 1 | ❌ exit 1 |');
    expect(md).toContain('FAILED tests/test_math.py::test_sub - assert 1 == 2');
    expect(md).toContain('high · bandit B602 at src\\/calc\\.py\\:7: subprocess call with shell\\=True');
    expect(md).toContain('detect\\-secrets not run (not installed in the image)');
    expect(md).toMatch(
      /What the model saw \(its own last test run[^)]*; not the result\)<\/summary>\n\n- pytest \\-q: exit 0/,
    );
  });

  it('neutralises and redacts test names, messages and output tails', () => {
    const token = 'ghp_' + 'A'.repeat(36);
    const verdict = mixedVerdict({
      regressions: [
        {
          id: 'test_x @maintainer fixes #12 <!-- frognano:status -->',
          command: 'c',
          base: 'passed',
          patched: 'failed',
        },
      ],
      patched: side('b', [commandRun({ exitCode: 1, outputTail: `token ${token}\n## Heading\n@someone` })]),
    });
    const md = verificationSection({ state: 'verified', verdict }, []).join('\n');
    expect(md).not.toContain('@maintainer');
    expect(md).not.toContain('#12');
    expect(md).not.toContain('<!--');
    expect(md).not.toContain(token);
    // A heading in the tail stays inside its code fence.
    expect(md).toMatch(/```text\ntoken \[REDACTED\]\n## Heading\n@\u200Bsomeone\n```/);
    expect(md).not.toContain('@someone');
  });

  it('says "not run" with its reason (never a pass) and "not verified" when off', () => {
    const notRun = verificationSection({ state: 'not_run', reason: 'the verifier crashed' }, modelTests).join('\n');
    expect(notRun).toContain('⚠️ **Verification did not run:** the verifier crashed. This is not a pass');
    expect(notRun).not.toContain('✅');
    const off = verificationSection(
      { state: 'off', reason: 'verification is off on this runner (FROGNANO_VERIFY=off)' },
      [],
    );
    expect(off.join('\n')).toContain(
      '⚪ **Not verified:** verification is off on this runner \\(FROGNANO\\_VERIFY\\=off\\)',
    );
  });

  it('keeps the old Tests section for a round that does not verify', () => {
    expect(verificationSection(undefined, modelTests)[0]).toBe('## Tests');
  });

  it('a verdict without a measured patched side is "not run"', () => {
    const v = mixedVerdict({ patched: side('b', [], { notRun: 'the sandbox would not start' }) });
    expect(outcomeOfVerdict(v)).toEqual({ state: 'not_run', reason: 'the sandbox would not start', verdict: v });
  });
});

describe('the status comment line', () => {
  it('reads the verdict in one line', () => {
    expect(verificationStatusLine({ state: 'verified', verdict: mixedVerdict() })).toBe(
      'Verification: ❌ 1 test fixed\\, 1 regression\\: tests\\/test\\_math\\.py\\:\\:test\\_sub.',
    );
    expect(verificationStatusLine({ state: 'not_run', reason: 'timed out' })).toBe(
      'Verification: ⚠️ did not run (timed out); not a pass.',
    );
    expect(verificationLine({ state: 'off', reason: 'verify.enabled is false' })).toBe(
      '⚪ not verified: verify.enabled is false',
    );
  });
});

describe('the frognano / verification check run', () => {
  beforeAll(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  afterEach(() => nock.cleanAll());

  it('is not green for a failing verdict, with annotations at the regression and the finding', () => {
    const out = verificationCheckOutput({ state: 'verified', verdict: mixedVerdict() });
    expect(out.conclusion).toBe('failure');
    expect(out.annotations).toEqual([
      expect.objectContaining({
        path: 'tests/test_math.py',
        start_line: 12,
        end_line: 12,
        annotation_level: 'failure',
      }),
      expect.objectContaining({ path: 'src/calc.py', start_line: 7, title: 'Security: bandit B602' }),
    ]);
    expect(out.summary).toContain('| pytest -q | ❌ exit 1 | ❌ exit 1 |');
    expect(out.summary).toContain('Fixed: 1 · Regressions: 1');
    expect(out.summary).toContain('detect-secrets: not run (not installed in the image)');
  });

  it('never annotates a path outside the repository; not run is neutral, off is skipped', () => {
    const v = mixedVerdict();
    v.regressions[0]!.file = '../../etc/passwd';
    v.findings[0]!.file = '/abs/path.py';
    expect(verificationCheckOutput({ state: 'verified', verdict: v }).annotations).toEqual([]);
    expect(verificationCheckOutput({ state: 'not_run', reason: 'crashed' }).conclusion).toBe('neutral');
    expect(verificationCheckOutput({ state: 'off', reason: 'off' }).conclusion).toBe('skipped');
  });

  it('sends more than 50 annotations as a create and updates of at most 50, within a total cap', async () => {
    const regressions = Array.from({ length: 420 }, (_, i) => ({
      id: `tests/test_many.py::test_${i}`,
      command: 'pytest -q',
      base: 'passed' as const,
      patched: 'failed' as const,
      file: 'tests/test_many.py',
      line: i + 1,
    }));
    const verdict = mixedVerdict({ regressions, findings: [] });
    const bodies: { annotations: { start_line: number }[] }[] = [];
    let created: Record<string, unknown> = {};
    nock(API)
      .post('/repos/o/r/check-runs', (b: Record<string, unknown>) => {
        created = b;
        return true;
      })
      .reply(201, { id: 99 });
    nock(API)
      .patch('/repos/o/r/check-runs/99', (b: { output: { annotations: { start_line: number }[] } }) => {
        bodies.push(b.output);
        return true;
      })
      .times(5)
      .reply(200, { id: 99 });
    const id = await publishVerificationCheck(octokit as never, {
      owner: 'o',
      repo: 'r',
      headSha: 'c'.repeat(40),
      outcome: { state: 'verified', verdict },
      detailsUrl: 'https://bot.example/runs/x',
    });
    expect(id).toBe(99);
    expect(nock.isDone()).toBe(true);
    expect(created).toMatchObject({ name: VERIFICATION_CHECK_NAME, head_sha: 'c'.repeat(40), conclusion: 'failure' });
    const first = created.output as { annotations: { start_line: number }[]; summary: string };
    expect(first.annotations).toHaveLength(50);
    expect(bodies.map((b) => b.annotations.length)).toEqual([50, 50, 50, 50, 50]);
    const lines = [...first.annotations, ...bodies.flatMap((b) => b.annotations)].map((a) => a.start_line);
    expect(lines).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    expect(first.summary).toContain('120 more annotations were left out (at most 300).');
  });

  it('is left out of the checks the CI-fix round reads (its own verdict is not CI)', async () => {
    nock(API)
      .get('/repos/o/r/commits/abc/check-runs')
      .query(true)
      .reply(200, {
        total_count: 2,
        check_runs: [
          { id: 1, name: VERIFICATION_CHECK_NAME, status: 'completed', conclusion: 'failure' },
          { id: 2, name: 'ci / test', status: 'completed', conclusion: 'success' },
        ],
      });
    const runs = await listCheckRuns(octokit, { owner: 'o', repo: 'r', sha: 'abc' });
    expect(runs.map((r) => r.name)).toEqual(['ci / test']);
  });
});
