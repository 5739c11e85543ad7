import { describe, expect, test } from '@jest/globals';
import { appendRunHistory } from '../../src/github/followUpPullRequest.js';
import { renderPullRequestBody } from '../../src/github/pullRequest.js';
import { describeCurrentState, summaryLineOf } from '../../src/github/pullRequestDescription.js';
import { HOSTILE_FINAL_MESSAGE, liveClosingReferences } from './closingReferences.js';

/** The description after a follow-up round: the latest summary and tests, the whole PR's files, the rest kept. */
const draft = renderPullRequestBody({
  issueNumber: 7,
  summary: 'Fixed the typo.',
  files: [{ path: 'README.md', additions: 1, deletions: 1, binary: false }],
  tests: [],
  exitReason: 'agent',
  turns: 2,
  elapsedSeconds: 5,
  renderTrajectory: () => 'the trajectory',
});
const now = {
  round: 2,
  summary: 'Renamed the helper too.',
  files: [
    { path: 'README.md', additions: 2, deletions: 2, binary: false },
    { path: 'src/a.ts', additions: 5, deletions: 1, binary: false },
  ],
  baseBranch: 'main',
  tests: [{ command: 'npm test', exitCode: 0, timedOut: false, outputTail: '' }],
};

describe('describeCurrentState', () => {
  test('replaces Summary, Files changed and Tests; keeps the Run section, the trajectory and the text around', () => {
    const body = describeCurrentState(`${draft}\n\nA maintainer's note.`, now);
    expect(body).toContain(
      '## Summary\n\n_From follow-up round 2, the latest; earlier rounds are in the run history._\n\n',
    );
    expect(body).toContain('Renamed the helper too.');
    expect(body).not.toContain('Fixed the typo.');
    expect(body).toContain('## Files changed (2, +7 −3)');
    expect(body).toContain('| `README.md` | 2 | 2 |\n| `src/a.ts` | 5 | 1 |');
    expect(body).toContain('## Tests\n\n_Run by the agent in follow-up round 2._\n\n- `npm test`: ✅ passed');
    expect(body).toContain('\n## Run\n\n- Exit reason: `agent`');
    expect(body).toContain('<details><summary>Trajectory</summary>');
    expect(body.endsWith("A maintainer's note.")).toBe(true);
    expect(body.match(/^## (Summary|Files changed|Tests)/gm)).toEqual(['## Summary', '## Files changed', '## Tests']);
    // A second round replaces the first round's sections again, and only those.
    const again = describeCurrentState(body, { ...now, round: 3, summary: 'Third.' });
    expect(again.match(/^## Summary$/gm)).toHaveLength(1);
    expect(again).toContain('Third.');
    expect(again).not.toContain('Renamed the helper too.');
  });

  test('a description without the bot sections (a maintainer rewrote it) stays as it is', () => {
    expect(describeCurrentState('My own description.', now)).toBe('My own description.');
  });

  test('stops at the run history when the Run section is gone', () => {
    const withHistory = appendRunHistory('Refs #7\n\n## Summary\n\nOld.', {
      round: 'Follow-up 1',
      trigger: 't',
      headSha: null,
      result: 'r',
    });
    const body = describeCurrentState(withHistory, now);
    expect(body).toContain('## Tests');
    expect(body).toContain('<!-- frognano:history -->\n## Run history');
    expect(body).not.toContain('Old.');
  });

  test('the draft row takes the first line of the draft summary, once', () => {
    expect(summaryLineOf(draft)).toBe('Fixed the typo.');
    expect(
      summaryLineOf(appendRunHistory(draft, { round: 'Follow-up 1', trigger: 't', headSha: null, result: 'r' })),
    ).toBe('');
  });

  test('model text in the sections and the history rows closes nothing and cannot break the table', () => {
    const body = describeCurrentState(draft, { ...now, summary: HOSTILE_FINAL_MESSAGE });
    const history = appendRunHistory(body, {
      round: 'Follow-up 1',
      trigger: 'comment by m',
      headSha: 'a'.repeat(40),
      result: 'done',
      summary: `a | <b>x</b> \`y\\| ${HOSTILE_FINAL_MESSAGE}`,
    });
    expect(liveClosingReferences(history)).toEqual([]);
    const row = history.split('\n').find((l) => l.startsWith('| Follow-up 1 |'))!;
    expect(row.split(/(?<!\\)\|/)).toHaveLength(7); // five cells: no `|` of the model's ends one
    expect(row).not.toMatch(/<b>|`y/);
  });
});
