import { redactDeep } from '../leaf/trajectory.js';
import { checkKeyPart, type ObjectStore } from './objectStore.js';
import {
  parseStoredRound,
  RoundSummarySchema,
  type RoundRef,
  type RoundSummary,
  type RunRef,
  type StoredRound,
} from './record.js';

/** A stored round may not grow past this (FROGNANO_TRAJECTORY_MAX_BYTES); long texts are clipped to fit. */
export const DEFAULT_MAX_ROUND_BYTES = 16 * 1024 * 1024;
/** Rounds older than this are removed (FROGNANO_TRAJECTORY_RETENTION_DAYS). */
export const DEFAULT_RETENTION_DAYS = 90;

/** Clip lengths tried in turn until a round fits its byte bound. */
const CLIP_STEPS = [65_536, 16_384, 4_096, 1_024];

export class RoundTooLargeError extends Error {}

/**
 * Every round of every run, keyed `<owner>/<repo>/<issue>/<round>`: a small summary object (what the header and the
 * round selector need) and the full round beside it. Everything is redacted before it is written, and bounded.
 */
export class TrajectoryStore {
  constructor(
    private readonly objects: ObjectStore,
    private readonly o: { maxRoundBytes?: number; retentionDays?: number } = {},
  ) {}

  get description(): string {
    return this.objects.description;
  }

  get sweepsItself(): boolean {
    return this.objects.sweepsItself;
  }

  /** Stores one round (again, when a job runs twice: the later write wins). Returns the bytes written. */
  async putRound(round: StoredRound): Promise<number> {
    const text = boundedJson(redactDeep(round), this.o.maxRoundBytes ?? DEFAULT_MAX_ROUND_BYTES);
    const base = roundKey(round.ref);
    // The full round first: a summary never points at a round that is not there.
    await this.objects.put(`${base}.round.json`, text);
    await this.objects.put(`${base}.summary.json`, JSON.stringify(redactDeep(round.summary)));
    return Buffer.byteLength(text);
  }

  async getRound(ref: RoundRef): Promise<StoredRound | null> {
    const text = await this.objects.get(`${roundKey(ref)}.round.json`);
    return text === null ? null : parseStoredRound(text);
  }

  /** The run's rounds, oldest first; empty when there is no run. */
  async listRounds(ref: RunRef): Promise<RoundSummary[]> {
    const keys = (await this.objects.list(`${runKey(ref)}/`)).filter((k) => k.endsWith('.summary.json'));
    const out: RoundSummary[] = [];
    for (const k of keys) {
      const text = await this.objects.get(k);
      const parsed = text === null ? null : RoundSummarySchema.safeParse(safeJson(text));
      if (parsed?.success) out.push(parsed.data);
    }
    return out.sort((a, b) => a.round - b.round);
  }

  /**
   * The number the run's next round gets: one past the highest stored (0 for a new run). The runner takes it when it
   * starts publishing, so the links it posts point at the round it is about to store; one round runs at a time per
   * pull request, so two rounds never draw the same number.
   */
  async nextRound(ref: RunRef): Promise<number> {
    const rounds = await this.listRounds(ref);
    return rounds.length === 0 ? 0 : rounds[rounds.length - 1]!.round + 1;
  }

  /** Removes rounds past the retention period (the local directory's sweep; S3 can use a lifecycle rule). */
  async sweep(now = new Date()): Promise<number> {
    const days = this.o.retentionDays ?? DEFAULT_RETENTION_DAYS;
    return this.objects.deleteOlderThan(new Date(now.getTime() - days * 24 * 3600 * 1000));
  }
}

export function runKey(ref: RunRef): string {
  if (!Number.isInteger(ref.issueNumber) || ref.issueNumber <= 0)
    throw new Error(`not an issue number: ${ref.issueNumber}`);
  // GitHub names are case-insensitive: one run, one folder, however a link spells it.
  return `${checkKeyPart(ref.owner.toLowerCase())}/${checkKeyPart(ref.repo.toLowerCase())}/${ref.issueNumber}`;
}

export function roundKey(ref: RoundRef): string {
  if (!Number.isInteger(ref.round) || ref.round < 0) throw new Error(`not a round number: ${ref.round}`);
  return `${runKey(ref)}/${ref.round}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The round as JSON within `maxBytes`: long strings (tool output, file contents) are clipped harder until it fits. */
export function boundedJson(round: StoredRound, maxBytes: number): string {
  let text = JSON.stringify(round);
  for (const limit of CLIP_STEPS) {
    if (Buffer.byteLength(text) <= maxBytes) return text;
    text = JSON.stringify(clipStrings(round, limit));
  }
  if (Buffer.byteLength(text) <= maxBytes) return text;
  throw new RoundTooLargeError(
    `round is ${Buffer.byteLength(text)} bytes even with every text clipped; the bound is ${maxBytes}`,
  );
}

function clipStrings<T>(value: T, limit: number): T {
  if (typeof value === 'string') {
    return (
      value.length > limit
        ? `${value.slice(0, limit)}\n… [${value.length - limit} characters cut to fit the store]`
        : value
    ) as T;
  }
  if (Array.isArray(value)) return value.map((v) => clipStrings(v, limit)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = clipStrings(v, limit);
    return out as T;
  }
  return value;
}
