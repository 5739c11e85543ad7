/**
 * What one run page may cost, whatever the stored round holds (issue #31). A round is bounded only by the store
 * (16 MiB), and every character of it is model or tool output: 2.7M empty patch lines rendered to 70 MB in one
 * string. Each text is clipped to a number of lines and of rendered bytes, with a count of what was left out and a
 * link to the raw JSON of its step; a step past its own cap, or past the page's, is shown as a one-line stub that
 * keeps its anchor.
 */
const KiB = 1024;
const MiB = 1024 * KiB;

type LimitName =
  | 'pageBytes'
  | 'tailBytes'
  | 'stepBytes'
  | 'workBytes'
  | 'stepsShown'
  | 'barSegments'
  | 'callsPerStep'
  | 'parseErrorsPerStep'
  | 'argumentKeys'
  | 'argumentChars'
  | 'jsonDepth'
  | 'outputLines'
  | 'outputBytes'
  | 'proseLines'
  | 'proseBytes'
  | 'editLines'
  | 'editBytes'
  | 'patchLines'
  | 'patchBytes'
  | 'lineChars'
  | 'labelChars'
  | 'tests'
  | 'contextSections'
  | 'roundLinks';

export const PAGE_LIMITS: { readonly [K in LimitName]: number } = {
  /** The whole page (the header, verification and patch included). */
  pageBytes: 5 * MiB,
  /** Kept back from the timeline for what follows it: the final message, the patch, the tests. */
  tailBytes: 1536 * KiB,
  /** One step of the timeline; a step past it shows as a stub with its raw JSON link. */
  stepBytes: 512 * KiB,
  /**
   * Rendering done, kept or not: a step that renders past stepBytes is thrown away, and without this a round of such
   * steps would cost its rendering many times over.
   */
  workBytes: 12 * MiB,
  /** Steps with an anchor on the page (rendered or stubbed); the rest are counted in one line. */
  stepsShown: 2000,
  /** Segments of the timeline bar; above this many steps, neighbours share one. */
  barSegments: 400,
  callsPerStep: 20,
  parseErrorsPerStep: 10,
  /** Keys of one call's arguments listed. */
  argumentKeys: 40,
  /** One argument's JSON text, in characters, and the depth it is written to. */
  argumentChars: 8000,
  jsonDepth: 20,
  /** A tool's output, a test's output tail. */
  outputLines: 400,
  outputBytes: 64 * KiB,
  /** Reasoning, what the model said, the task, the final message. */
  proseLines: 1000,
  proseBytes: 96 * KiB,
  /** An Edit's old and new text, a Write's content (lines of each side). */
  editLines: 500,
  editBytes: 96 * KiB,
  /** The final patch. */
  patchLines: 5000,
  patchBytes: 768 * KiB,
  /** Any one line of a text above, in characters. */
  lineChars: 2000,
  /** Short texts: titles, triggers, results, a call's title. */
  labelChars: 300,
  tests: 50,
  contextSections: 20,
  /** Rounds linked in the round selector: the first, the latest and those around the shown one. */
  roundLinks: 30,
};

export type PageLimits = typeof PAGE_LIMITS;
