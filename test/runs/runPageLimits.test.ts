import { describe, expect, it } from '@jest/globals';
import { PAGE_LIMITS } from '../../src/runs/page/limits.js';
import { renderRunPage } from '../../src/runs/page/render.js';
import type { StoredRound } from '../../src/runs/record.js';
import { hostileRound, makeRound, renderPage as page } from './fixture.js';

/**
 * The page's cost is bounded whatever the stored round holds (issue #31): each case here rendered to tens of MB, or
 * threw, before PAGE_LIMITS. Render times are bench/trajectory-page.ts's figures, not assertions.
 */
/** Every in-page link names an id the page has. */
function danglingAnchors(html: string): string[] {
  const ids = new Set([...html.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]));
  return [...new Set([...html.matchAll(/href="#([^"]+)"/g)].map((m) => m[1]!))].filter((a) => !ids.has(a));
}

/** A round whose first step's first call has `observation` as its output. */
function withOutput(observation: string): StoredRound {
  const r = makeRound({ steps: 5, bytes: 20_000 });
  r.trajectory.steps[0]!.observations[0]!.observation = observation;
  return r;
}

describe('run page limits', () => {
  it('clips a patch of 2.7M empty lines, with the count and a link to the whole patch', () => {
    const html = page(hostileRound('patch'));
    expect(Buffer.byteLength(html)).toBeLessThan(PAGE_LIMITS.pageBytes);
    const kept = html.match(/<span class="ctx"> <\/span>/g)?.length ?? 0;
    expect(kept).toBeGreaterThan(100);
    expect(kept).toBeLessThanOrEqual(PAGE_LIMITS.patchLines);
    const more = /… ([0-9,]+) more lines · <a href="\/runs\/octo\/demo\/12\/0\/patch\.diff">whole patch<\/a>/.exec(
      html,
    );
    expect(more).not.toBeNull();
    // Every line accounted for: the 4 header lines, the empty ones shown, and the count.
    expect(Number(more![1]!.replace(/,/g, '')) + kept + 4).toBe(2_700_000 + 5);
  });

  it('renders tool-call arguments nested 6,000 arrays deep, cut at the depth bound, with the step linked', () => {
    const html = page(hostileRound('deep'));
    expect(html).toContain('<dt>extra</dt><dd>');
    expect(html).toContain(`${'['.repeat(PAGE_LIMITS.jsonDepth - 1)}&quot;[…]&quot;`);
    expect(html).toContain('<a href="/runs/octo/demo/12/0/step/1.json">raw JSON</a>');
  });

  it('keeps a 20,000-step round under the page cap, and every timeline link points at an anchor that exists', () => {
    const html = page(hostileRound('steps'));
    expect(Buffer.byteLength(html)).toBeLessThan(PAGE_LIMITS.pageBytes);
    expect(danglingAnchors(html)).toEqual([]);
    // The bar is bounded too: neighbours share a segment.
    expect(html.match(/<rect class="seg-model"/g)!.length).toBeLessThanOrEqual(PAGE_LIMITS.barSegments);
    expect(html).toContain('id="step-2000"');
    expect(html).not.toContain('id="step-2001"');
    expect(html).toContain(
      '<li class="step cut" id="steps-cut"><div class="step-head"><span class="meta">18,000 more steps are not shown · <a href="/runs/octo/demo/12/0/round.json">',
    );
    expect(html).toContain('href="#steps-cut"');
  });

  it('renders steps past the page budget as stubs that keep their anchors and link their raw JSON', () => {
    const r = makeRound({ steps: 400, bytes: 400 * 40_000 });
    const html = page(r);
    expect(Buffer.byteLength(html)).toBeLessThan(PAGE_LIMITS.pageBytes);
    expect(html).toMatch(
      /<li class="step cut" id="step-400" tabindex="-1"><div class="step-head"><a class="step-n" href="#step-400">Step 400<\/a><span class="meta">not shown: the page is at its size cap · <a href="\/runs\/octo\/demo\/12\/0\/step\/400\.json">raw JSON<\/a>/,
    );
    expect(html).toContain('<li class="step" id="step-1"');
    expect(danglingAnchors(html)).toEqual([]);
    // What follows the timeline still shows.
    expect(html).toContain('<section id="patch"><h2>Final patch</h2><pre class="diff patch"><span class="hdr">');
  });

  it('stays under the page cap with every part at its worst at once', () => {
    const r = makeRound({ steps: 600, bytes: 600 * 20_000 });
    const wide = `${'&\u202e'.repeat(1000)}\n`.repeat(2000);
    r.trajectory.frognano.task.body = wide;
    r.trajectory.frognano.task.context = Array.from({ length: 30 }, (_, k) => ({ heading: `s${k}`, text: wide }));
    r.trajectory.final_message = wide;
    r.trajectory.error = wide;
    r.patch = `@@ -1 +1 @@\n${wide}`;
    r.tests = Array.from({ length: 80 }, (_, k) => ({
      command: `t${k}`,
      exitCode: 1,
      timedOut: false,
      outputTail: wide,
    }));
    const html = page(r);
    expect(Buffer.byteLength(html)).toBeLessThan(PAGE_LIMITS.pageBytes);
    expect(danglingAnchors(html)).toEqual([]);
    expect(html).toContain('more test commands');
    expect(html).toContain('more sections');
    expect(html).toContain('</main></body></html>');
  });

  it('clips a long output by lines and by bytes, counting what it left out', () => {
    const byLines = page(withOutput('line\n'.repeat(100_000)));
    expect(byLines).toContain(
      `… ${(100_001 - PAGE_LIMITS.outputLines).toLocaleString('en-US')} more lines · <a href="/runs/octo/demo/12/0/step/1.json">raw JSON</a>`,
    );
    expect(byLines).toMatch(/<summary>Output · 100,001 lines/);
    const oneLine = page(withOutput('y'.repeat(5_000_000)));
    expect(oneLine).toContain(`… ${(5_000_000 - PAGE_LIMITS.lineChars).toLocaleString('en-US')} more characters`);
    expect(Buffer.byteLength(oneLine)).toBeLessThan(1024 * 1024);
  });

  it('shows a step that renders past its own cap as a stub with its anchor and raw JSON link', () => {
    const r = makeRound({ steps: 3, bytes: 20_000 });
    const calls = Array.from({ length: 20 }, (_, k) => ({
      id: `c${k}`,
      type: 'function' as const,
      function: { name: 'Bash', arguments: JSON.stringify({ command: 'ls' }) },
    }));
    r.trajectory.steps[1]!.assistant.tool_calls = calls;
    // 20 outputs of lines of `&` (5 bytes each once escaped): each within its own cap (64 KiB), the step past 512 KiB.
    const observation = `${'&'.repeat(PAGE_LIMITS.lineChars)}\n`.repeat(10);
    r.trajectory.steps[1]!.observations = calls.map(() => ({ tool: 'Bash', observation }));
    const html = page(r);
    expect(html).toMatch(
      /<li class="step cut" id="step-2" tabindex="-1">.*not shown: it renders to [0-9,]+ KiB, over a step's cap · <a href="\/runs\/octo\/demo\/12\/0\/step\/2\.json">raw JSON<\/a>/,
    );
    expect(html).toContain('id="step-3"');
    expect(danglingAnchors(html)).toEqual([]);
  });

  it('marks invisible and bidirectional characters in outputs and diffs, with a warning on the step and the hunk', () => {
    const r = withOutput('if (isAdmin) {\u202e } \u2066// check later\u2069 {\u200b');
    r.patch = [
      'diff --git a/a.js b/a.js',
      '--- a/a.js',
      '+++ b/a.js',
      '@@ -1 +1 @@',
      '-ok();',
      '+ok();',
      '@@ -9 +9 @@',
      '-let access = "user";',
      '+let access = "user\u202e \u2066// admin\u2069 \u2066";',
    ].join('\n');
    const html = page(r);
    const step1 = html.slice(html.indexOf('id="step-1"'), html.indexOf('id="step-2"'));
    expect(step1).toContain('bidirectional or invisible Unicode characters');
    for (const cp of ['202E', '2066', '2069', '200B']) expect(step1).toContain(`⟨U+${cp}⟩`);
    expect(step1).not.toMatch(/[\u202e\u2066\u2069\u200b]/);
    const step2 = html.slice(html.indexOf('id="step-2"'), html.indexOf('id="step-3"'));
    expect(step2).not.toContain('bidi-warn');
    const patch = html.slice(html.indexOf('<section id="patch">'));
    expect(patch.match(/This hunk contains bidirectional/g)).toHaveLength(1);
    // The banner sits on the second hunk, not the first.
    expect(patch.indexOf('This hunk')).toBeGreaterThan(patch.indexOf('+ok();'));
    expect(patch).toContain('&quot;user<span class="invisible">⟨U+202E⟩</span>');
  });

  it('links at most roundLinks rounds: the first, the latest and a window around the shown one, the rest counted', () => {
    const r = makeRound({ steps: 2, bytes: 1000 });
    const rounds = Array.from({ length: 5000 }, (_, i) => ({ ...r.summary, round: i + 1 }));
    const shown = { ...r, summary: { ...r.summary, round: 2500 } };
    const html = renderRunPage({ round: shown, rounds, roundHref: (n) => `/runs/octo/demo/12/${n}`, staticBase: '/s' });
    const links = [...html.matchAll(/data-round="(\d+)"/g)].map((m) => Number(m[1]));
    expect(links).toHaveLength(PAGE_LIMITS.roundLinks);
    expect(links[0]).toBe(1);
    expect(links.at(-1)).toBe(5000);
    expect(links).toContain(2500);
    expect(html.match(/<li class="gap">[\d,]+ more rounds<\/li>/g)).toHaveLength(2);
    expect(html).toMatch(/aria-current="page"/);
    // Few rounds: every one is linked, no gap.
    const few = renderRunPage({ round: r, rounds: rounds.slice(0, 3), roundHref: String, staticBase: '/s' });
    expect(few.match(/data-round=/g)).toHaveLength(3);
    expect(few).not.toContain('class="gap"');
  });
});
