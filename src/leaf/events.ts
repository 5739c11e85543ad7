import type { RetryInfo } from '../inference/retry.js';
import type { FinishReason } from '../inference/types.js';
import type { ExitReason } from './trajectory.js';

/**
 * Progress of a Leaf run, for status comments, logs and metrics. Listeners must be quick; an exception
 * thrown by one is swallowed so progress reporting can never break a run.
 */
export type LeafEvent =
  | { type: 'turn_start'; turn: number; maxTurns: number; promptTokens: number }
  | {
      type: 'turn_end';
      turn: number;
      maxTurns: number;
      promptTokens: number;
      completionTokens: number;
      toolCalls: number;
      parseErrors: number;
      finishReason: FinishReason;
      generateMs: number;
    }
  /** The model server failed and the backend waits to try again (its own words may name internal URLs: log only). */
  | { type: 'model_retry'; turn: number; retry: RetryInfo }
  | { type: 'tool_start'; turn: number; callId: string; name: string; summary: string }
  | {
      type: 'tool_end';
      turn: number;
      callId: string;
      name: string;
      elapsedMs: number;
      isError: boolean;
      outputChars: number;
    }
  /** solve() only: setup commands before the loop, test commands after it. */
  | { type: 'command_start'; phase: 'setup' | 'test'; command: string }
  | {
      type: 'command_end';
      phase: 'setup' | 'test';
      command: string;
      exitCode: number | null;
      timedOut: boolean;
      durationMs: number;
    }
  /** solve() and verification sides: the set-up phase ended, restored from a snapshot (`reusedKey`) or run. */
  | { type: 'setup_end'; reusedKey?: string; durationMs: number }
  | {
      type: 'finished';
      exitReason: ExitReason;
      turns: number;
      elapsedSec: number;
      contextTokens: number;
      error: string | null;
    };

export type LeafEventListener = (event: LeafEvent) => void;

/** Wraps a listener so it never throws into the loop. */
export function safeListener(listener: LeafEventListener | undefined): LeafEventListener {
  return (event) => {
    if (!listener) return;
    try {
      listener(event);
    } catch {
      /* a broken progress listener must not end the run */
    }
  };
}
