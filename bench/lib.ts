/** What several bench scripts share: order statistics of their samples and a committed scratch repository. */
import { execFileSync } from 'node:child_process';

/** Order statistics of a sample (timings, usually); the machine may be shared, so medians say more than means. */
export function summarize(xs: readonly number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  return {
    min: s[0]!,
    median: pct(50),
    p90: pct(90),
    max: s[s.length - 1]!,
    mean: s.reduce((a, b) => a + b, 0) / s.length,
  };
}

/** Makes `dir` a git repository with everything in it committed, under a fixed identity. */
export function commitAll(dir: string, message: string): void {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'b',
    GIT_AUTHOR_EMAIL: 'b@x',
    GIT_COMMITTER_NAME: 'b',
    GIT_COMMITTER_EMAIL: 'b@x',
  };
  execFileSync('git', ['init', '-q'], { cwd: dir });
  execFileSync('git', ['add', '-A'], { cwd: dir });
  execFileSync('git', ['commit', '-qm', message], { cwd: dir, env });
}
