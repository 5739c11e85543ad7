import type { ChangedFile } from '../leaf/patch.js';

/**
 * Per-file +/- counts of a unified git diff (what `git diff --stat` shows), for patches stored in a
 * trajectory where the repository is no longer at hand (solve itself gets them from git's --numstat).
 */
export function diffStat(patch: string): ChangedFile[] {
  const files: ChangedFile[] = [];
  let current: ChangedFile | undefined;
  let inHunk = false;
  for (const line of patch.split('\n')) {
    const header = /^diff --git a\/(.+?) b\/(.+)$/.exec(line);
    if (header) {
      current = { path: header[2], additions: 0, deletions: 0, binary: false };
      files.push(current);
      inHunk = false;
      continue;
    }
    if (!current) continue;
    if (line.startsWith('@@')) {
      inHunk = true;
      continue;
    }
    if (!inHunk) {
      const renamed = /^rename to (.+)$/.exec(line);
      if (renamed) current.path = renamed[1];
      if (/^Binary files .* differ$/.test(line) || line === 'GIT binary patch') current.binary = true;
      continue;
    }
    if (line.startsWith('+')) current.additions++;
    else if (line.startsWith('-')) current.deletions++;
  }
  return files;
}

/** ` src/a.ts | 7 +++++--` lines and the `N files changed, +A -D` total, like git's --stat. */
export function renderDiffStat(files: ChangedFile[], barWidth = 30): string[] {
  if (files.length === 0) return ['no changes'];
  const width = Math.min(60, Math.max(...files.map((f) => f.path.length)));
  const most = Math.max(1, ...files.map((f) => f.additions + f.deletions));
  const scale = most > barWidth ? barWidth / most : 1;
  const lines = files.map((f) => {
    const name = f.path.length > width ? `…${f.path.slice(-(width - 1))}` : f.path.padEnd(width);
    if (f.binary) return ` ${name} | Bin`;
    const n = f.additions + f.deletions;
    const bar = '+'.repeat(Math.round(f.additions * scale)) + '-'.repeat(Math.round(f.deletions * scale));
    return ` ${name} | ${String(n).padStart(4)} ${bar}`.trimEnd();
  });
  const add = files.reduce((s, f) => s + f.additions, 0);
  const del = files.reduce((s, f) => s + f.deletions, 0);
  lines.push(
    ` ${files.length} file${files.length === 1 ? '' : 's'} changed, ${add} insertion${add === 1 ? '' : 's'}(+), ${del} deletion${del === 1 ? '' : 's'}(-)`,
  );
  return lines;
}
