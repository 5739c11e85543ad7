/**
 * Jobs BullMQ gives up on itself. A job whose runner stops renewing its lock (process killed, out of
 * memory, network cut) "stalls" and goes back to the queue; after more than `maxStalledCount` stalls
 * BullMQ fails it with this fixed reason, without ever calling the runner's code for it again.
 */
export const STALLED_FAILED_REASON = 'job stalled more than allowable limit';

export function isStalledFailure(reason: string | undefined | null): boolean {
  return reason === STALLED_FAILED_REASON;
}

/** What the status comment says about such a job (`times`: the job's stall count, when known). */
export function stalledFailureText(times?: number): string {
  const count = times && times > 0 ? `${times} time${times === 1 ? '' : 's'}` : 'repeatedly';
  return (
    `The runner stopped responding ${count} while working on this issue (it crashed, was killed, or lost its ` +
    'connection to Redis), so the job was given up instead of being started yet again. ' +
    "Comment `/frognano retry` to try again; if it keeps happening, check the runner's logs and memory."
  );
}
