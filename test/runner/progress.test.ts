import { ProgressReporter } from '../../src/runner/progress.js';
import type { RunnerProgress } from '../../src/queue/schema.js';

describe('ProgressReporter', () => {
  it('throttles comment edits, keeps job progress fresher, and never writes after close()', async () => {
    let now = 0;
    const jobWrites: RunnerProgress[] = [];
    const commentWrites: RunnerProgress[] = [];
    let releaseSlowComment: () => void = () => undefined;
    const r = new ProgressReporter(
      { runner: 'r1', phase: 'starting' },
      {
        job: async (p) => void jobWrites.push(p),
        comment: async (p) => {
          commentWrites.push(p);
          if (p.turn === 1) await new Promise<void>((res) => (releaseSlowComment = res)); // a slow GitHub edit
        },
      },
      { jobEveryMs: 1000, commentEveryMs: 10_000, now: () => now },
    );
    const turn = (n: number) => r.onEvent({ type: 'turn_start', turn: n, maxTurns: 9, promptTokens: 10 });

    now = 20_000;
    turn(1); // both due
    now = 20_500;
    turn(2); // neither due
    now = 21_200;
    turn(3); // job due, comment not
    await new Promise((res) => setTimeout(res, 10));
    const closing = r.close(); // waits for the slow edit of turn 1
    now = 60_000;
    turn(4); // after close: ignored
    releaseSlowComment();
    await closing;

    expect(jobWrites.map((p) => p.turn)).toEqual([1, 3]);
    expect(commentWrites.map((p) => p.turn)).toEqual([1]);
    expect(r.progress).toMatchObject({ phase: 'solving', turn: 4, maxTurns: 9 });
  });

  it('reports sink failures instead of throwing into the run', async () => {
    const errors: unknown[] = [];
    const r = new ProgressReporter(
      { runner: 'r1', phase: 'starting' },
      {
        job: async () => Promise.reject(new Error('redis down')),
        comment: async () => undefined,
        onError: (e) => errors.push(e),
      },
    );
    r.update({ phase: 'cloning' });
    await r.close();
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('redis down');
  });
  it("tells the issue that the model server is retrying, without the backend's words (they can name internal URLs)", async () => {
    let now = 0;
    const comments: RunnerProgress[] = [];
    const r = new ProgressReporter(
      { runner: 'r1', phase: 'solving' },
      { job: async () => undefined, comment: async (p) => void comments.push(p) },
      { commentEveryMs: 10_000, now: () => now },
    );
    const retry = (n: number) =>
      r.onEvent({
        type: 'model_retry',
        turn: 3,
        retry: {
          retry: n,
          maxRetries: 12,
          delayMs: 2000,
          elapsedMs: 1000,
          reason: 'http://vllm.internal:8000/v1 returned 503.',
        },
      });
    now = 1000;
    retry(1); // the first retry is shown at once, even though a comment was written less than 10 s ago
    now = 2000;
    retry(2); // later ones wait for the comment interval
    await r.close();
    expect(comments.map((p) => p.detail)).toEqual(['The model server is not answering; retry 1 of 12.']);
    expect(r.progress.detail).toBe('The model server is not answering; retry 2 of 12.');
    expect(JSON.stringify(comments)).not.toContain('vllm.internal');
  });
});
