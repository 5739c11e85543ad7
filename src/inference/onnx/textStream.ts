/**
 * The decoded text of one generation as it grows: cut at the first stop string, and handed to onToken as it comes,
 * holding back the last characters that might still turn out to begin a stop string.
 */
export class StoppableText {
  private readonly stops: string[];
  /** Characters kept from onToken until more text shows they start no stop string. */
  private readonly holdBack: number;
  private text = '';
  private streamed = 0;
  private stopAt = -1;

  constructor(
    stops: string[] | undefined,
    private readonly onToken?: (text: string) => void,
  ) {
    this.stops = (stops ?? []).filter((s) => s.length > 0);
    this.holdBack = this.stops.length ? Math.max(...this.stops.map((s) => s.length)) - 1 : 0;
  }

  /** A stop string has appeared: generation should end. */
  get stopped(): boolean {
    return this.stopAt >= 0;
  }

  /** Appends decoded text; true once a stop string has appeared. */
  push(piece: string): boolean {
    const searchFrom = Math.max(0, this.text.length - this.holdBack);
    this.text += piece;
    for (const s of this.stops) {
      const at = this.text.indexOf(s, searchFrom);
      if (at >= 0 && (this.stopAt < 0 || at < this.stopAt)) this.stopAt = at;
    }
    this.stream(false);
    return this.stopped;
  }

  /** Ends the text (with the detokenizer's remainder unless stopped), streams the rest, and returns it whole. */
  finish(remainder: () => string): string {
    if (this.stopAt < 0) this.text += remainder();
    else this.text = this.text.slice(0, this.stopAt);
    this.stream(true);
    return this.text;
  }

  private stream(final: boolean): void {
    const pending = final ? this.text.length : Math.max(this.streamed, this.text.length - this.holdBack);
    const end = this.stopAt >= 0 ? this.stopAt : pending;
    if (end > this.streamed) {
      this.onToken?.(this.text.slice(this.streamed, end));
      this.streamed = end;
    }
  }
}
