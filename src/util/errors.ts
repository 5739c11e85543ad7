/** An error as one line for a trajectory or a log: `Name: message`, or the thrown value as text. */
export function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
