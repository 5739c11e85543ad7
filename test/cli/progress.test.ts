import { Writable } from 'node:stream';
import { ProgressReporter } from '../../src/cli/progress.js';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('ProgressReporter', () => {
  test('plain mode writes one timestamped line per turn and tool, and the finish', () => {
    const out = new Capture();
    const c = clock();
    const p = new ProgressReporter(out, { tty: false, now: c.now });
    p.phase('copying repository');
    p.onEvent({ type: 'turn_start', turn: 1, maxTurns: 30, promptTokens: 2100 });
    c.advance(4000);
    p.onEvent({
      type: 'turn_end',
      turn: 1,
      maxTurns: 30,
      promptTokens: 2100,
      completionTokens: 200,
      toolCalls: 1,
      parseErrors: 1,
      finishReason: 'tool_calls',
      generateMs: 4000,
    });
    p.onEvent({ type: 'tool_start', turn: 1, callId: 'c1', name: 'Bash', summary: 'npm test\n  --silent' });
    c.advance(61_000);
    p.onEvent({
      type: 'tool_end',
      turn: 1,
      callId: 'c1',
      name: 'Bash',
      elapsedMs: 61_000,
      isError: true,
      outputChars: 10,
    });
    p.onEvent({
      type: 'finished',
      exitReason: 'max_turns',
      turns: 1,
      elapsedSec: 65,
      contextTokens: 2500,
      error: null,
    });
    p.onEvent({ type: 'command_start', phase: 'test', command: 'npm test' });
    p.onEvent({
      type: 'command_end',
      phase: 'test',
      command: 'npm test',
      exitCode: 1,
      timedOut: false,
      durationMs: 2000,
    });
    p.stop();
    expect(out.text.split('\n')).toEqual([
      '[0.0s] copying repository',
      '[0.0s] turn 1/30 · context 2.1k tokens',
      '[4.0s]   turn 1: generated 200 tokens in 4.0s (50.0 tok/s), 1 tool call, 1 malformed tool call',
      '[4.0s]   → Bash npm test --silent',
      '[1m05s]   ✗ Bash failed after 1m01s',
      '[1m05s] finished after 1 turn: max_turns',
      '[1m05s] test: $ npm test',
      '[1m05s] test: ✗ failed (exit 1) in 2.0s',
      '',
    ]);
    expect(out.text).not.toContain('\x1b');
  });

  test('tty mode rewrites a single status line and clears it on stop', () => {
    const out = new Capture();
    const c = clock();
    const p = new ProgressReporter(out, { tty: true, columns: 60, now: c.now, tickMs: 60_000 });
    p.onEvent({ type: 'turn_start', turn: 3, maxTurns: 100, promptTokens: 12_345 });
    p.onEvent({ type: 'tool_start', turn: 3, callId: 'c', name: 'Read', summary: 'src/index.ts' });
    c.advance(65_000);
    expect(p.statusLine()).toBe('turn 3/100 │ Read src/index.ts │ ctx 12.3k · gen 0 tok │ 1m05s');
    p.note('warning: something');
    p.stop();
    expect(out.text).not.toContain('\n[');
    // Every redraw starts by clearing the line; the only newline is the note's.
    expect(out.text.split('\r\x1b[2K').length).toBeGreaterThan(3);
    expect(out.text.match(/\n/g)).toHaveLength(1);
    expect(out.text.endsWith('\r\x1b[2K')).toBe(true);
    // Cut to the terminal width.
    for (const frame of out.text.split('\r\x1b[2K')) expect(frame.replace('\n', '').length).toBeLessThanOrEqual(59);
  });
});
