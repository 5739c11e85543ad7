/**
 * The page's stylesheet and script, served as files from the app itself so the Content-Security-Policy can forbid
 * every inline script and style. The script only adds to a page that reads fine without it: j/k between steps,
 * `/` to the filter box, and the filter hiding steps that do not contain its text.
 */
export const PAGE_CSS = `
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;--accent:#0969da;--add:#dafbe1;--del:#ffebe9;
--hunk:#ddf4ff;--warn:#9a6700;--err:#d1242f;--ok:#1a7f37;--cur:#fff8c5}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--card:#151b23;
--accent:#4493f8;--add:#12261e;--del:#25171c;--hunk:#121d2f;--warn:#d29922;--err:#f85149;--ok:#3fb950;--cur:#2b2a16}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
a{color:var(--accent)}
header.run,main{max-width:1100px;margin:0 auto;padding:12px 20px}
header.run{border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:4px 0 12px}
h2{font-size:17px;margin:24px 0 8px}
h3{font-size:14px;margin:12px 0 4px}
.crumbs,.user{color:var(--muted);margin:0}
.user{float:right}
.user button{background:none;border:0;padding:0;font:inherit;color:var(--accent);text-decoration:underline;cursor:pointer}
nav.rounds ol{display:flex;flex-wrap:wrap;gap:8px;list-style:none;padding:0;margin:0 0 12px}
nav.rounds li.gap{align-self:center;color:var(--muted)}
a.round{display:block;border:1px solid var(--line);border-radius:6px;padding:6px 10px;text-decoration:none;color:var(--fg);background:var(--card)}
a.round[aria-current=page]{border-color:var(--accent);box-shadow:inset 0 -3px 0 var(--accent)}
a.round small{color:var(--muted)}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(240px,1fr));gap:4px 16px;margin:0}
dl.facts dt{color:var(--muted);font-size:12px}dl.facts dd{margin:0}
.toolbar{position:sticky;top:0;z-index:1;display:flex;gap:16px;align-items:center;flex-wrap:wrap;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line)}
.toolbar input{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--fg);width:260px}
.hint{color:var(--muted);font-size:12px}
kbd{border:1px solid var(--line);border-radius:4px;padding:0 4px;font-size:11px}
ol.timeline{list-style:none;padding:0;margin:12px 0}
li.step{border:1px solid var(--line);border-radius:6px;margin:0 0 10px;padding:8px 12px;scroll-margin-top:56px}
li.step.current{outline:2px solid var(--accent);background:var(--cur)}
li.step[hidden]{display:none}
.step-head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.step-n{font-weight:600;text-decoration:none}
.meta{color:var(--muted);font-size:12px;margin-left:auto}
.tool{font:600 12px ui-monospace,SFMono-Regular,Menlo,monospace;border-radius:4px;padding:0 5px;background:var(--hunk)}
.call{border-left:3px solid var(--line);margin:8px 0;padding-left:10px}
.call.failed{border-left-color:var(--err)}
.call-head{display:flex;gap:8px;align-items:baseline}
code,pre{font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:8px;margin:6px 0;overflow:auto;max-height:480px;white-space:pre-wrap;overflow-wrap:anywhere}
pre.prose{font:13px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;background:none;border:0;padding:0;max-height:none}
pre.err{border-color:var(--err)}
pre.diff{white-space:pre;overflow-wrap:normal}
pre.patch{max-height:none}
.diff span{display:block}
.add{background:var(--add)}.del{background:var(--del)}.hunk{background:var(--hunk);color:var(--muted)}.hdr{font-weight:600}
.diff-label{color:var(--muted);font-size:12px}
details>summary{cursor:pointer;color:var(--muted)}
details.reasoning{margin:4px 0}
dl.args{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0}
dl.args dt{color:var(--muted)}dl.args dd{margin:0;white-space:pre-wrap;font:12px ui-monospace,monospace}
.warn{color:var(--warn)}
ul.tests{list-style:none;padding:0}
.verdict.pass{color:var(--ok);font-weight:600}.verdict.fail{color:var(--err);font-weight:600}
.none{color:var(--muted)}
figure.bar{margin:12px 0 4px}
figure.bar svg{display:block;width:100%;height:20px;border-radius:4px;background:var(--card)}
figure.bar figcaption{color:var(--muted);font-size:12px}
.seg-model{fill:var(--accent)}.seg-tools{fill:var(--ok)}.seg-failed{fill:var(--err)}.seg-gap{fill:var(--bg)}
figure.bar a:hover rect:not(.seg-gap){opacity:.7}
.key{display:inline-block;width:10px;height:10px;border-radius:2px;margin-left:8px}
.key.seg-model{background:var(--accent)}.key.seg-tools{background:var(--ok)}.key.seg-failed{background:var(--err)}
#verification{border-bottom:1px solid var(--line);padding-bottom:8px}
.badge{display:inline-block;border:1px solid currentColor;border-radius:2em;padding:0 8px;font-size:12px;font-weight:600}
.badge-success{color:var(--ok)}.badge-failure{color:var(--err)}.badge-not-run{color:var(--warn)}.badge-neutral,.badge-off{color:var(--muted)}
table.verify-runs{border-collapse:collapse;width:100%;margin:8px 0}
table.verify-runs th,table.verify-runs td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
table.verify-runs th{background:var(--card);font-weight:600}
ul.verify-list{padding-left:20px;margin:4px 0}ul.verify-list li{margin:2px 0}
.where,.move{color:var(--muted);font-size:12px}
pre.msg{max-height:160px}
.sev{font-weight:600;font-size:12px}.sev-high{color:var(--err)}.sev-medium{color:var(--warn)}.sev-low{color:var(--muted)}
.invisible{color:var(--err);font-size:11px}
.clip{display:block;color:var(--muted);font-style:italic}
.bidi-warn{display:block;color:var(--warn);background:var(--cur);font-weight:600}
li.step.cut .meta{font-style:italic}
`;

export const PAGE_JS = `
(function () {
  var steps = Array.prototype.slice.call(document.querySelectorAll('li.step'));
  var filter = document.getElementById('filter');
  var current = -1;
  function visible() { return steps.filter(function (s) { return !s.hidden; }); }
  function go(delta) {
    var list = visible();
    if (!list.length) return;
    var at = list.indexOf(steps[current]);
    var next = list[Math.max(0, Math.min(list.length - 1, at < 0 ? (delta > 0 ? 0 : list.length - 1) : at + delta))];
    if (steps[current]) steps[current].classList.remove('current');
    current = steps.indexOf(next);
    next.classList.add('current');
    next.focus({ preventScroll: true });
    next.scrollIntoView({ block: 'start' });
    history.replaceState(null, '', '#' + next.id);
  }
  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var typing = e.target && /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName);
    if (typing) { if (e.key === 'Escape') e.target.blur(); return; }
    if (e.key === 'j') { go(1); e.preventDefault(); }
    else if (e.key === 'k') { go(-1); e.preventDefault(); }
    else if (e.key === '/' && filter) { filter.focus(); e.preventDefault(); }
  });
  if (filter) filter.addEventListener('input', function () {
    var q = filter.value.trim().toLowerCase();
    steps.forEach(function (s) { s.hidden = q !== '' && s.textContent.toLowerCase().indexOf(q) < 0; });
  });
})();
`;
