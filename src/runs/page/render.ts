import { describeExit } from '../../leaf/trajectory.js';
import type { RoundSummary, StoredRound } from '../record.js';
import { renderPatch } from './diff.js';
import { escapeHtml, foldedPre, formatCount, formatDuration } from './html.js';
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
}

const KIND_TEXT = { draft: 'First draft', 'follow-up': 'Follow-up', 'ci-fix': 'CI fix' } as const;

/** The whole page, server-rendered: readable without JavaScript; the script only adds j/k and the filter. */
export function renderRunPage(p: RunPageInput): string {
  const { ref, summary } = p.round;
  const title = `${ref.owner}/${ref.repo}#${ref.issueNumber} · round ${summary.round}`;
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">',
    '<meta name="color-scheme" content="light dark">',
    `<title>${escapeHtml(title)} · frognano</title>`,
    `<link rel="stylesheet" href="${p.staticBase}/page.css"><script src="${p.staticBase}/page.js" defer></script>`,
    '</head><body>',
    renderHeader(p),
    // Concatenated, not its own line: a round without verification renders byte for byte as before.
    `<main>${renderVerification(p.round.verification)}`,
    '<div class="toolbar"><label>Filter steps <input type="search" id="filter" placeholder="text in a step" autocomplete="off"></label>',
    `<span class="hint">${formatCount(p.round.trajectory.steps.length)} steps · <kbd>j</kbd>/<kbd>k</kbd> next/previous · <kbd>/</kbd> filter</span></div>`,
    renderTimelineBar(p.round.trajectory),
    renderTask(p.round),
    renderTimeline(p.round.trajectory),
    renderOutcome(p.round),
    '</main></body></html>',
  ].join('\n');
}

function renderHeader(p: RunPageInput): string {
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
    ? `<p class="user">${escapeHtml(p.user.login)} · <a href="${p.user.signOutHref}">sign out</a></p>`
    : '';
  const t = p.round.trajectory;
  return [
    `<header class="run">${user}<p class="crumbs">${escapeHtml(ref.owner)}/${escapeHtml(ref.repo)} · ${links.join(' · ')}</p>`,
    `<h1>${escapeHtml(summary.issueTitle || `Issue #${ref.issueNumber}`)}</h1>`,
    renderRoundNav(p),
    '<dl class="facts">',
    fact('Round', `${summary.round} · ${KIND_TEXT[summary.kind]}`),
    fact('Trigger', escapeHtml(summary.trigger)),
    fact('Result', escapeHtml(summary.result)),
    fact('Ended', `<code>${escapeHtml(t.exit_reason)}</code> · ${escapeHtml(describeExit(t))}`),
    fact('Duration', formatDuration(summary.durationSec * 1000)),
    fact('Tokens', `${formatCount(summary.promptTokens)} prompt · ${formatCount(summary.completionTokens)} completion`),
    fact('Model', escapeHtml(`${t.frognano.model.model} (${t.frognano.model.backend})`)),
    fact('Started', escapeHtml(summary.startedAt || '—')),
    '</dl></header>',
  ].join('');
}

function fact(name: string, html: string): string {
  return `<div><dt>${name}</dt><dd>${html}</dd></div>`;
}

/** Links, one per round: they work without JavaScript, and the current one is marked for screen readers. */
function renderRoundNav(p: RunPageInput): string {
  const items = p.rounds.map((r) => {
    const current = r.round === p.round.summary.round ? ' aria-current="page"' : '';
    const text = `<b>Round ${r.round}</b> ${KIND_TEXT[r.kind]}<br><small>${escapeHtml(r.trigger)} · ${escapeHtml(r.result)} · ${formatDuration(r.durationSec * 1000)} · ${formatCount(r.promptTokens + r.completionTokens)} tokens</small>`;
    return `<li><a class="round" data-round="${r.round}" href="${p.roundHref(r.round)}"${current}>${text}</a></li>`;
  });
  return `<nav class="rounds" aria-label="Rounds"><ol>${items.join('')}</ol></nav>`;
}

function renderTask(r: StoredRound): string {
  const task = r.trajectory.frognano.task;
  const context = (task.context ?? []).map(
    (s) => `<h3>${escapeHtml(s.heading)}</h3>${foldedPre(s.text, { label: s.heading, cls: 'prose' })}`,
  );
  return `<details class="task"><summary>Task given to the model</summary><h3>${escapeHtml(task.title)}</h3><pre class="prose">${escapeHtml(task.body)}</pre>${context.join('')}</details>`;
}

function renderOutcome(r: StoredRound): string {
  const t = r.trajectory;
  const final = t.final_message.trim()
    ? `<section id="final"><h2>Final message</h2><pre class="prose">${escapeHtml(t.final_message)}</pre></section>`
    : '';
  const patch = r.patch.trim()
    ? `<pre class="diff patch">${renderPatch(r.patch)}</pre>`
    : '<p class="none">This round left no patch.</p>';
  const tests = r.tests.length
    ? `<ul class="tests">${r.tests.map((x) => `<li class="${x.exitCode === 0 && !x.timedOut ? 'pass' : 'fail'}"><code>${escapeHtml(x.command)}</code> ${testVerdict(x)}${x.outputTail.trim() ? foldedPre(x.outputTail, { label: 'Output (tail)', maxLines: 0 }) : ''}</li>`).join('')}</ul>`
    : '<p class="none">No test commands ran after the model finished.</p>';
  const error = t.error ? `<p class="warn">Error: <code>${escapeHtml(t.error)}</code></p>` : '';
  return `${error}${final}<section id="patch"><h2>Final patch</h2>${patch}</section><section id="tests"><h2>Tests</h2>${tests}</section>`;
}

function testVerdict(x: StoredRound['tests'][number]): string {
  if (x.timedOut) return '<span class="verdict fail">timed out</span>';
  return x.exitCode === 0
    ? '<span class="verdict pass">passed</span>'
    : `<span class="verdict fail">failed (exit ${x.exitCode ?? 'killed'})</span>`;
}
