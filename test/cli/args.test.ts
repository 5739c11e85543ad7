import { parseCommandArgs, parseDuration, parseIssueRef, parsePositiveInt } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/exitCodes.js';
import { formatDuration, formatTokens, oneLine, trimMiddle } from '../../src/cli/format.js';
import { taskFromText } from '../../src/cli/issueSource.js';

describe('argument helpers', () => {
  test('durations: bare seconds, units and combinations', () => {
    expect(parseDuration('wall-time', '90', 'solve')).toBe(90_000);
    expect(parseDuration('wall-time', '15m', 'solve')).toBe(900_000);
    expect(parseDuration('wall-time', '1h30m', 'solve')).toBe(5_400_000);
    expect(parseDuration('wall-time', '500ms', 'solve')).toBe(500);
    expect(parseDuration('wall-time', '1.5s', 'solve')).toBe(1500);
    for (const bad of ['', 'soon', '10x', '-5', '0', '5m3', 'm5']) {
      expect(() => parseDuration('wall-time', bad, 'solve')).toThrow(UsageError);
    }
    expect(() => parseDuration('wall-time', 'soon', 'solve')).toThrow(/--wall-time wants a duration like 90s/);
  });

  test('positive integers', () => {
    expect(parsePositiveInt('max-turns', '30', 'solve')).toBe(30);
    for (const bad of ['0', '-1', '1.5', 'ten', '', '99999999999999999999']) {
      expect(() => parsePositiveInt('max-turns', bad, 'solve')).toThrow(/--max-turns wants a positive whole number/);
    }
  });

  test('issue references', () => {
    expect(parseIssueRef('octo-org/hello.world#42', 'solve')).toEqual({
      owner: 'octo-org',
      repo: 'hello.world',
      issueNumber: 42,
    });
    for (const bad of ['octo/repo', 'octo#4', 'octo/repo#0', 'octo/repo#x', 'a b/c#1', 'o/r#1#2']) {
      expect(() => parseIssueRef(bad, 'solve')).toThrow(/owner\/repo#NUMBER/);
    }
  });

  test('parseArgs errors become usage errors naming the command', () => {
    const opts = { json: { type: 'boolean' }, out: { type: 'string' } } as const;
    expect(parseCommandArgs('solve', ['x', '--json', '--out', 'd'], opts)).toMatchObject({
      values: { json: true, out: 'd' },
      positionals: ['x'],
    });
    let err: unknown;
    try {
      parseCommandArgs('solve', ['--frobnicate'], opts);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).command).toBe('solve');
    expect((err as UsageError).message).toMatch(/Unknown option '--frobnicate'/);
    expect(() => parseCommandArgs('solve', ['--out'], opts)).toThrow(/--out/);
  });

  test('issue text: first line is the title, heading marks dropped', () => {
    expect(taskFromText('\n# Fix crash on empty input\n\nSteps:\n1. run it\n')).toEqual({
      title: 'Fix crash on empty input',
      body: 'Steps:\n1. run it',
    });
    expect(taskFromText('Just a title')).toEqual({ title: 'Just a title', body: '' });
    expect(() => taskFromText('  \n\n')).toThrow(/issue text is empty/);
  });
});

describe('formatting', () => {
  test('durations and tokens', () => {
    expect(formatDuration(4200)).toBe('4.2s');
    // Progress lines: "[23s]", never "[0m23s]".
    expect(formatDuration(23_000)).toBe('23s');
    expect(formatDuration(59_999)).toBe('59s');
    expect(formatDuration(65_000)).toBe('1m05s');
    expect(formatDuration(3_725_000)).toBe('1h02m');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(12_345)).toBe('12.3k');
    expect(formatTokens(131_072)).toBe('131k');
  });

  test('oneLine and trimMiddle cut and say so', () => {
    expect(oneLine('a\n  b\tc', 10)).toBe('a b c');
    expect(oneLine('abcdefghijkl', 5)).toBe('abcd…');
    const t = trimMiddle('x'.repeat(50) + 'y'.repeat(50), 20);
    expect(t).toMatch(/^x{12}\n\[… 80 chars trimmed …\]\ny{8}$/);
  });
});
