/**
 * Incremental detokenization for streaming. Decoding token by token breaks multi-byte characters that
 * byte-level BPE splits over several tokens, and re-decoding the whole output every step is quadratic.
 * So decode a short window: text is released once the window decodes without a trailing replacement
 * character (U+FFFD, an unfinished UTF-8 sequence).
 */
export type DecodeFn = (ids: number[]) => string;

export class IncrementalDetokenizer {
  private readonly ids: number[] = [];
  /** Start of the window whose decoded text has already been (partly) released. */
  private prefixOffset = 0;
  /** End of the released part of the window. */
  private readOffset = 0;

  private readonly decode: DecodeFn;

  constructor(decode: DecodeFn) {
    this.decode = (ids) => (ids.length ? decode(ids) : '');
  }

  /** Adds one token; returns the newly completed text (possibly empty). */
  push(id: number): string {
    this.ids.push(id);
    const prefixText = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decode(this.ids.slice(this.prefixOffset));
    if (fullText.length > prefixText.length && !fullText.endsWith('\uFFFD')) {
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      return fullText.slice(prefixText.length);
    }
    return '';
  }

  /** Whatever is still held back at the end of generation (an unfinished character decodes as U+FFFD). */
  flush(): string {
    const prefixText = this.decode(this.ids.slice(this.prefixOffset, this.readOffset));
    const fullText = this.decode(this.ids.slice(this.prefixOffset));
    this.prefixOffset = this.readOffset = this.ids.length;
    return fullText.slice(prefixText.length);
  }
}
