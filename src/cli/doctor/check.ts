/** One line of `frognano doctor`: what was checked, how it went, and what to do about it. */
export type CheckStatus = 'ok' | 'fail' | 'warn';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  /** What was found ("v20.20.2", "PONG from redis 7.0.15 at redis://..."). */
  detail: string;
  /** How to fix it; only for fail/warn. */
  hint?: string;
  /** A failed required check makes doctor exit non-zero; optional ones only warn. */
  required: boolean;
}

export const SYMBOL: Record<CheckStatus, string> = { ok: '✓', fail: '✗', warn: '!' };

const ok = (name: string, detail: string, required = true): CheckResult => ({ name, status: 'ok', detail, required });
const fail = (name: string, detail: string, hint: string, required = true): CheckResult => ({
  name,
  status: 'fail',
  detail,
  hint,
  required,
});
const warn = (name: string, detail: string, hint: string): CheckResult => ({
  name,
  status: 'warn',
  detail,
  hint,
  required: false,
});
export const check = { ok, fail, warn };

/** Runs a check, turning anything it throws into a failed line instead of a crash of the whole report. */
export async function guarded(name: string, required: boolean, run: () => Promise<CheckResult>): Promise<CheckResult> {
  try {
    return await run();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return {
      name,
      status: 'fail',
      detail: message,
      hint: 'unexpected error while checking; see the message',
      required,
    };
  }
}

/** `✓ Node.js  v20.20.2` and, for problems, an indented `  → hint` line. */
export function formatCheck(r: CheckResult, nameWidth: number): string {
  const line = `${SYMBOL[r.status]} ${r.name.padEnd(nameWidth)}  ${r.detail}`;
  return r.hint && r.status !== 'ok' ? `${line}\n  ${' '.repeat(nameWidth)}  → ${r.hint}` : line;
}
