import { describeExit } from '../../leaf/trajectory.js';
import type { RoundSummary, StoredRound } from '../record.js';
import { clip } from '../../util/clip.js';
import { clipNote, clippedPre } from './clipText.js';
import { renderPatch } from './diff.js';
import { escapeHtml, escapeShown, formatCount, formatDuration } from './html.js';
import { PAGE_LIMITS, type PageLimits } from './limits.js';
import { renderTimeline } from './steps.js';
import { renderTimelineBar } from './timelineBar.js';
import { renderVerification } from './verification.js';

export interface RunPageInput {
  round: StoredRound;
  /** Every round of the run, oldest first (the selector). */
  rounds: RoundSummary[];
  /** The page of round n (links between rounds). */
  roundHref: (round: number) => string;
  /** Where the page's CSS and script are served (`/runs/_static`). */
  staticBase: string;
  /** https://github.com, for links to the issue and the pull request; omitted for a local run. */
  githubUrl?: string;
  /** Shown in the corner with a sign-out link, when signed in. */
  user?: { login: string; signOutHref: string };
  /** Where this round's raw JSON routes start (`…/<round>`); roundHref of this round when omitted. */
  rawBase?: string;
  limits?: PageLimits;
}

const KIND_TEXT = { draft: 'First draft', 'follow-up': 'Follow-up', 'ci-fix': 'CI fix' } as const;

/** The whole page as one string (tests, the bench); the server streams `renderRunPageChunks`. */
export function renderRunPage(p: RunPageInput): string {
  return [...renderRunPageChunks(p)].join('');
}

/**
 * The whole page, server-rendered, in pieces to stream: readable without JavaScript; the script only adds j/k and
 * the filter. Its size is bounded by `limits.pageBytes` whatever the round holds (limits.ts).
 */
export function* renderRunPageChunks(p: RunPageInput): Generator<string> {
  const L = p.limits ?? PAGE_LIMITS;
  const { ref, summary } = p.round;
  const title = `${ref.owner}/${ref.repo}#${ref.issueNumber} · round ${summary.round}`;
  const raw = rawLinks(p);
  const top = [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">',
    '<meta name="color-scheme" content="light dark">',
    `<title>${escapeHtml(clip(title, L.labelChars))} · frognano</title>`,
    `<link rel="stylesheet" href="${p.staticBase}/page.css"><script src="${p.staticBase}/page.js" defer></script>`,
    '</head><body>',
    renderHeader(p, L),
    // Concatenated, not its own line: a round without verification renders byte for byte as before.
    `<main>${boundedVerification(p.round.verification, L, raw.round)}`,
    '<div class="toolbar"><label>Filter steps <input type="search" id="filter" placeholder="text in a step" autocomplete="off"></label>',
    `<span class="hint">${formatCount(p.round.trajectory.steps.length)} steps · <kbd>j</kbd>/<kbd>k</kbd> next/previous · <kbd>/</kbd> filter</span></div>`,
    renderTimelineBar(p.round.trajectory, L),
    renderTask(p.round, L, raw.round),
    '',
  ].join('\n');
  yield top;
  const budgetBytes = L.pageBytes - L.tailBytes - Buffer.byteLength(top);
  yield* renderTimeline(p.round.trajectory, { rawStep: raw.step, rawRound: raw.round, budgetBytes, limits: L });
  yield `\n${renderOutcome(p.round, L, raw)}\n</main></body></html>`;
}

/** The Verification section, whose lists cap themselves; a section past `tailBytes` altogether is replaced by a link. */
function boundedVerification(v: StoredRound['verification'], L: PageLimits, rawRound: string): string {
  const html = renderVerification(v);
  if (html.length <= L.tailBytes) return html;
  const note = clipNote(`the section renders to ${formatCount(Buffer.byteLength(html) / 1024)} KiB`, rawRound);
  return `<section id="verification"><h2>Verification</h2><p class="none">${note}</p></section>`;
}

/** Where the raw JSON of the round, of a step, and the whole patch are served (http.ts, the same permission check). */
function rawLinks(p: RunPageInput): { round: string; patch: string; step: (n: number) => string } {
  const base = p.rawBase ?? p.roundHref(p.round.summary.round);
  return { round: `${base}/round.json`, patch: `${base}/patch.diff`, step: (n) => `${base}/step/${n}.json` };
}

function renderHeader(p: RunPageInput, L: PageLimits): string {
  const { ref, summary } = p.round;
  const gh = p.githubUrl
    ? `${p.githubUrl}/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.repo)}`
    : undefined;
  const links = [
    gh ? `<a href="${gh}/issues/${ref.issueNumber}">issue #${ref.issueNumber}</a>` : `issue #${ref.issueNumber}`,
    ...(summary.pullNumber
      ? [
          gh
            ? `<a href="${gh}/pull/${summary.pullNumber}">pull request #${summary.pullNumber}</a>`
            : `pull request #${summary.pullNumber}`,
        ]
      : []),
  ];
  const user = p.user
    ? `<form class="user" method="post" action="${p.user.signOutHref}">${escapeHtml(p.user.login)} · <button type="submit">sign out</button></form>`
    : '';
  const t = p.round.trajectory;
  const text = (x: string) => escapeShown(clip(x, L.labelChars));
  return [
    `<header class="run">${user}<p class="crumbs">${escapeHtml(ref.owner)}/${escapeHtml(ref.repo)} · ${links.join(' · ')}</p>`,
    `<h1>${text(summary.issueTitle || `Issue #${ref.issueNumber}`)}</h1>`,
    renderRoundNav(p, L),
    '<dl class="facts">',
    fact('Round', `${summary.round} · ${KIND_TEXT[summary.kind]}`),
    fact('Trigger', text(summary.trigger)),
    fact('Result', text(summary.result)),
    fact('Ended', `<code>${text(t.exit_reason)}</code> · ${text(describeExit(t))}`),
    fact('Duration', formatDuration(summary.durationSec * 1000)),
    fact('Tokens', `${formatCount(summary.promptTokens)} prompt · ${formatCount(summary.completionTokens)} completion`),
    fact('Model', text(`${t.frognano.model.model} (${t.frognano.model.backend})`)),
    fact('Started', text(summary.startedAt || '—')),
    '</dl></header>',
  ].join('');
}

function fact(name: string, html: string): string {
  return `<div><dt>${name}</dt><dd>${html}</dd></div>`;
}

/**
 * Links, one per round: they work without JavaScript, and the current one is marked for screen readers. The round
 * count comes from the store, so past `roundLinks` only the first, the latest and a window around the shown round
 * are linked, with the rounds left out counted.
 */
function renderRoundNav(p: RunPageInput, L: PageLimits): string {
  const items: string[] = [];
  let skipped = 0;
  const shown = roundsShown(
    p.rounds.length,
    p.rounds.findIndex((r) => r.round === p.round.summary.round),
    L,
  );
  p.rounds.forEach((r, i) => {
    if (!shown(i)) return void skipped++;
    if (skipped) items.push(`<li class="gap">${formatCount(skipped)} more rounds</li>`);
    skipped = 0;
    const current = r.round === p.round.summary.round ? ' aria-current="page"' : '';
    const text = `<b>Round ${r.round}</b> ${KIND_TEXT[r.kind]}<br><small>${escapeShown(clip(r.trigger, L.labelChars))} · ${escapeShown(clip(r.result, L.labelChars))} · ${formatDuration(r.durationSec * 1000)} · ${formatCount(r.promptTokens + r.completionTokens)} tokens</small>`;
    items.push(
      `<li><a class="round" data-round="${r.round}" href="${p.roundHref(r.round)}"${current}>${text}</a></li>`,
    );
  });
  if (skipped) items.push(`<li class="gap">${formatCount(skipped)} more rounds</li>`);
  return `<nav class="rounds" aria-label="Rounds"><ol>${items.join('')}</ol></nav>`;
}

/** Which of `count` rounds get a link: all up to the cap, else the first, the last and a window around `at`. */
function roundsShown(count: number, at: number, L: PageLimits): (i: number) => boolean {
  if (count <= L.roundLinks) return () => true;
  const half = Math.floor((L.roundLinks - 2) / 2);
  const centre = at < 0 ? count - 1 : at;
  const start = Math.max(1, Math.min(centre - half, count - 1 - (L.roundLinks - 2)));
  const end = start + L.roundLinks - 2;
  return (i) => i === 0 || i === count - 1 || (i >= start && i < end);
}

function renderTask(r: StoredRound, L: PageLimits, rawRound: string): string {
  const task = r.trajectory.frognano.task;
  const caps = { maxLines: L.proseLines, maxBytes: L.proseBytes, lineChars: L.lineChars };
  const body = clippedPre(task.body, { label: 'Body', cls: 'prose', caps, rawHref: rawRound, fold: false });
  const sections = (task.context ?? []).slice(0, L.contextSections);
  const context: string[] = [];
  let bytes = body.length;
  for (const s of sections) {
    if (bytes > 2 * L.proseBytes) {
      context.push(`<p>${clipNote(`${formatCount(sections.length - context.length)} more sections`, rawRound)}</p>`);
      break;
    }
    const label = clip(s.heading, L.labelChars);
    context.push(
      `<h3>${escapeShown(label)}</h3>${clippedPre(s.text, { label, cls: 'prose', caps, rawHref: rawRound })}`,
    );
    bytes += context[context.length - 1]!.length;
  }
  return `<details class="task"><summary>Task given to the model</summary><h3>${escapeShown(clip(task.title, L.labelChars))}</h3>${body}${context.join('')}</details>`;
}

function renderOutcome(r: StoredRound, L: PageLimits, raw: { round: string; patch: string }): string {
  const t = r.trajectory;
  const prose = { maxLines: L.proseLines, maxBytes: L.proseBytes, lineChars: L.lineChars };
  const final = t.final_message.trim()
    ? `<section id="final"><h2>Final message</h2>${clippedPre(t.final_message, { label: 'Final message', cls: 'prose', caps: prose, rawHref: raw.round, fold: false })}</section>`
    : '';
  const patchCaps = { maxLines: L.patchLines, maxBytes: L.patchBytes, lineChars: L.lineChars };
  const patch = hasText(r.patch)
    ? `<pre class="diff patch">${renderPatch(r.patch, { caps: patchCaps, rawHref: raw.patch })}</pre>`
    : '<p class="none">This round left no patch.</p>';
  const out = { maxLines: L.outputLines, maxBytes: L.outputBytes, lineChars: L.lineChars };
  const testItem = (x: StoredRound['tests'][number]) =>
    `<li class="${x.exitCode === 0 && !x.timedOut ? 'pass' : 'fail'}"><code>${escapeShown(clip(x.command, L.labelChars))}</code> ${testVerdict(x)}${hasText(x.outputTail) ? clippedPre(x.outputTail, { label: 'Output (tail)', caps: out, rawHref: raw.round, foldLines: 0 }) : ''}</li>`;
  const items: string[] = [];
  let testBytes = 0;
  // The tests share one budget (what the patch leaves of the tail), then are counted.
  for (const x of r.tests.slice(0, L.tests)) {
    if (testBytes > L.tailBytes / 3) break;
    items.push(testItem(x));
    testBytes += items[items.length - 1]!.length;
  }
  const moreTests =
    r.tests.length > items.length
      ? `<li>${clipNote(`${formatCount(r.tests.length - items.length)} more test commands`, raw.round)}</li>`
      : '';
  const tests = r.tests.length
    ? `<ul class="tests">${items.join('')}${moreTests}</ul>`
    : '<p class="none">No test commands ran after the model finished.</p>';
  const error = t.error ? `<p class="warn">Error: <code>${escapeShown(clip(t.error, L.lineChars))}</code></p>` : '';
  return `${error}${final}<section id="patch"><h2>Final patch</h2>${patch}</section><section id="tests"><h2>Tests</h2>${tests}</section>`;
}

/** Whether the text has a non-space character, without trimming (a copy) a 16 MiB text. */
function hasText(text: string): boolean {
  return /\S/.test(text);
}

function testVerdict(x: StoredRound['tests'][number]): string {
  if (x.timedOut) return '<span class="verdict fail">timed out</span>';
  return x.exitCode === 0
    ? '<span class="verdict pass">passed</span>'
    : `<span class="verdict fail">failed (exit ${x.exitCode ?? 'killed'})</span>`;
}
