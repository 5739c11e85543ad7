import { describe, expect, it } from '@jest/globals';
import { parseStoredRound, type StoredRound } from '../../src/runs/record.js';
import { boundedJson } from '../../src/runs/trajectoryStore.js';
import { storeRunPage } from '../../src/runner/runPage.js';
import type { JobRun } from '../../src/runner/roundVariant.js';
import type { SolveResult } from '../../src/leaf/solve.js';
import type { VerificationOutcome } from '../../src/verify/outcome.js';
import type { TestChange } from '../../src/verify/types.js';
import { commandRun, mixedVerdict, side } from '../support/verdicts.js';
import { makeRound, renderPage as page } from './fixture.js';

/** Issue #26: the run page shows the verdict the bot measured, as the pull request description does. */

function withVerification(verification: VerificationOutcome): StoredRound {
  return { ...makeRound({ steps: 3, bytes: 10_000 }), verification };
}

/** The Verification section alone. */
function section(r: StoredRound): string {
  const html = page(r);
  const start = html.indexOf('<section id="verification">');
  expect(start).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
}

/** A stored round read back as the app reads it. */
function roundTrip(r: StoredRound): StoredRound {
  const back = parseStoredRound(boundedJson(r, 16 * 1024 * 1024));
  expect(back).not.toBeNull();
  return back!;
}

describe('the run page Verification section', () => {
  it('shows a mixed verdict near the top: badge, headline, lists, findings, scans, per-command rows and tails', () => {
    const r = roundTrip(
      withVerification({
        state: 'verified',
        verdict: mixedVerdict({
          stillFailing: [
            { id: 'tests/test_io.py::test_read', command: 'pytest -q', base: 'failed', patched: 'failed' },
          ],
          newTests: [{ id: 'tests/test_math.py::test_mul', command: 'pytest -q', patched: 'passed' }],
          testFiles: [
            {
              file: 'tests/test_old.py',
              change: 'modified',
              removedTests: ['tests/test_old.py::test_gone'],
              newlySkipped: ['tests/test_old.py::test_skipped'],
              changedTests: [],
            },
          ],
        }),
      }),
    );
    const html = page(r);
    // Above the steps: the first thing after the header.
    expect(html.indexOf('id="verification"')).toBeLessThan(html.indexOf('id="timeline"'));
    const s = section(r);
    expect(s).toContain('<span class="badge badge-failure">❌ failure</span>');
    expect(s).toContain('1 test fixed, 1 regression: tests/test_math.py::test_sub');
    expect(s).toMatch(
      /<h3>Regressions \(1\)<\/h3><ul class="verify-list"><li><code><bdi>tests\/test_math.py::test_sub/,
    );
    expect(s).toContain('<span class="where"><bdi>tests/test_math.py:12</bdi></span>');
    expect(s).toContain('passed → failed');
    expect(s).toContain('<pre class="out msg">assert 1 == 2</pre>');
    expect(s).toContain('<h3>Fixed (1)</h3>');
    expect(s).toContain('tests/test_math.py::test_add');
    expect(s).toContain('<h3>Still failing (1)</h3>');
    expect(s).toContain('<h3>New tests (1)</h3>');
    expect(s).toMatch(
      /tests\/test_old.py<\/bdi><\/code> changed<br>removed \(1\): <code><bdi>tests\/test_old.py::test_gone/,
    );
    expect(s).toContain('newly skipped (1)');
    expect(s).toMatch(/<span class="sev sev-high"><bdi>high<\/bdi><\/span> <bdi>bandit<\/bdi> <code><bdi>B602/);
    expect(s).toContain('src/calc.py:7');
    expect(s).toContain('detect-secrets</bdi> not run (<bdi>not installed in the image</bdi>)');
    expect(s).toContain('bandit</bdi> ran (1 file)');
    // One row per test command: base and patched exit codes and durations; the tail collapsed.
    expect(s).toContain('<th>Test command</th><th>Base</th><th>This change</th>');
    expect(s.match(/<tr><td><code>/g)).toHaveLength(1);
    expect(s).toContain('❌ exit 1</span> · 1.2 s');
    expect(s).toContain(
      '<details class="tail"><summary>Output (tail)</summary><pre class="out">FAILED tests/test_math.py::test_sub - assert 1 == 2</pre></details>',
    );
  });

  it('escapes hostile test ids, messages, findings and tails, and shows bidi and invisible characters', () => {
    const evil = 'tests/t.py::test_<script>alert(1)</script>\u202Egnp.exe';
    const hostile: TestChange = {
      id: evil,
      command: 'pytest -q',
      base: 'passed',
      patched: 'failed',
      file: 'tests/<img src=x onerror=alert(2)>.py',
      line: 3,
      message: '<iframe src="https://evil.example"></iframe>\u2066hidden\u2069\u200B',
    };
    const r = roundTrip(
      withVerification({
        state: 'verified',
        verdict: mixedVerdict({
          headline: '1 regression: <script>alert(3)</script>',
          regressions: [hostile],
          patched: side('b'.repeat(40), [
            commandRun({ command: 'pytest "<b>x</b>"', exitCode: 1, outputTail: '</pre><script>alert(4)</script>' }),
          ]),
          findings: [
            {
              kind: 'secret',
              tool: '<svg onload=alert(5)>',
              rule: '\'"><script>',
              severity: 'high',
              file: 'a.py',
              line: 1,
              message: '\u202Ereversed',
            },
          ],
          scans: [{ tool: 'semgrep', ran: false, reason: '<script>alert(6)</script>' }],
        }),
      }),
    );
    const html = page(r);
    const s = section(r);
    expect(html).not.toMatch(/<script>alert|<img src=x|<iframe|<svg onload|<b>x<\/b>|<\/pre><script>/);
    expect(s).toContain('tests/t.py::test_&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(s).toContain('&lt;iframe src=&quot;https://evil.example&quot;&gt;');
    expect(s).toContain('&lt;/pre&gt;&lt;script&gt;alert(4)&lt;/script&gt;');
    // No bidi control or invisible character reaches the page raw: each is shown where it was.
    expect(s).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B]/);
    expect(s).toContain('<span class="invisible">⟨U+202E⟩</span>gnp.exe');
    expect(s).toContain('<span class="invisible">⟨U+2066⟩</span>hidden<span class="invisible">⟨U+2069⟩</span>');
    expect(s).toContain('<span class="invisible">⟨U+200B⟩</span>');
    // The page's own script only; no inline handlers or styles.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/<[^>]*\s(on[a-z]+|style)=/);
  });

  it('renders a round stored without verification exactly as before', () => {
    const r = makeRound({ steps: 3, bytes: 10_000 });
    expect(r).not.toHaveProperty('verification');
    const html = page(r);
    expect(html).not.toContain('id="verification"');
    expect(html).not.toContain('Verification');
    // An old record (no field at all) still loads, and one whose verdict another version wrote loads without it.
    expect(roundTrip(r)).not.toHaveProperty('verification');
    const foreign = JSON.stringify({ ...r, verification: { state: 'verified', verdict: { conclusion: 'maybe' } } });
    const back = parseStoredRound(foreign);
    expect(back).not.toBeNull();
    expect(back).not.toHaveProperty('verification');
    expect(page(back!)).toBe(html);
  });

  it("says why for 'off' and 'not_run', and never calls them a pass", () => {
    const off = section(
      roundTrip(withVerification({ state: 'off', reason: 'verification is off on this runner (FROGNANO_VERIFY=off)' })),
    );
    expect(off).toContain('<span class="badge badge-off">⚪ off</span>');
    expect(off).toContain('<b>Not verified:</b> <bdi>verification is off on this runner (FROGNANO_VERIFY=off)</bdi>.');

    const notRun = section(
      roundTrip(withVerification({ state: 'not_run', reason: 'the verifier ran out of time <b>late</b>' })),
    );
    expect(notRun).toContain('<span class="badge badge-not-run">⚠️ not run</span>');
    expect(notRun).toContain(
      '<b>Verification did not run:</b> <bdi>the verifier ran out of time &lt;b&gt;late&lt;/b&gt;</bdi>.',
    );
    expect(notRun).toContain('This is not a pass: nothing was measured.');
    expect(notRun).not.toContain('<table');

    // With what was measured before it stopped: the base ran, this change did not.
    const partial = mixedVerdict({
      patched: side('b'.repeat(40), [], { notRun: 'the sandbox would not start' }),
      regressions: [],
      fixed: [],
    });
    const measured = section(
      roundTrip(withVerification({ state: 'not_run', reason: 'the sandbox would not start', verdict: partial })),
    );
    expect(measured).toContain('What was measured before it stopped');
    expect(measured).toContain('This change was not measured: <bdi>the sandbox would not start</bdi>.');
    expect(measured).toMatch(/❌ exit 1<\/span> · 1.2 s<\/td><td><span class="none">not run<\/span>/);
    expect(measured).not.toContain('1 test fixed');
  });

  it('caps long lists with "and N more"', () => {
    const many = Array.from({ length: 60 }, (_, i) => ({
      id: `tests/test_big.py::test_${i}`,
      command: 'pytest -q',
      base: 'passed' as const,
      patched: 'failed' as const,
    }));
    const s = section(withVerification({ state: 'verified', verdict: mixedVerdict({ regressions: many }) }));
    expect(s).toContain('<h3>Regressions (60)</h3>');
    expect(s).toContain('test_big.py::test_49<');
    expect(s).not.toContain('test_big.py::test_50<');
    expect(s).toContain('<li class="none">… and 10 more</li>');
  });
});

describe('storeRunPage', () => {
  it("stores the round with the verify step's outcome", async () => {
    const stored: StoredRound[] = [];
    const fixture = makeRound({ steps: 3, bytes: 10_000 });
    const verification: VerificationOutcome = { state: 'verified', verdict: mixedVerdict() };
    const run = {
      data: {
        owner: 'octo',
        repo: 'demo',
        issueNumber: 12,
        title: 'Fix the parser',
        trigger: 'label',
        triggeredBy: { login: 'maint', id: 1 },
      },
      ctx: {
        trajectoryStore: { description: 'memory', putRound: async (r: StoredRound) => (stored.push(r), 1) },
      },
      page: { round: 0, kind: 'draft', verification },
      log: { info: () => undefined, warn: () => undefined },
    } as unknown as JobRun;
    const solved = { trajectory: fixture.trajectory, testResults: [], patch: fixture.patch } as unknown as SolveResult;
    await storeRunPage(run, solved, { kind: 'pull_request', url: 'https://x/pull/13', number: 13, summary: '' });
    expect(stored).toHaveLength(1);
    expect(stored[0]!.verification).toEqual(verification);
    expect(roundTrip(stored[0]!).verification).toEqual(verification);
  });
});
