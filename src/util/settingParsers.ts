import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The value parsers of the settings table (src/util/settings.ts). Each takes the trimmed, non-empty text of one
 * variable and returns its value, or throws ValueRejected: the table turns that into one line naming the variable
 * and `accepts` (the words a parser puts there are what the user reads, so they say what IS accepted).
 */
export class ValueRejected extends Error {}

export interface Parser<T> {
  parse(raw: string): T;
  /** What the parser accepts, in words (the one line a bad value gets, and the docs' table). */
  accepts: string;
}

export const text: Parser<string> = { parse: (raw) => raw, accepts: 'any text' };

export function oneOf<const V extends string>(...values: V[]): Parser<V> {
  return {
    parse(raw) {
      const v = raw.toLowerCase();
      if (!(values as string[]).includes(v)) throw new ValueRejected();
      return v as V;
    },
    accepts: values.join(', '),
  };
}

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];
export const bool: Parser<boolean> = {
  parse(raw) {
    const v = raw.toLowerCase();
    if (TRUE.includes(v)) return true;
    if (FALSE.includes(v)) return false;
    throw new ValueRejected();
  },
  accepts: 'true or false (also 1/0, yes/no, on/off)',
};

/** A number in [min, max]; `whole` refuses fractions. `above` makes min exclusive. */
export function num(o: { min?: number; max?: number; whole?: boolean; above?: number } = {}): Parser<number> {
  const words = [o.whole ? 'a whole number' : 'a number'];
  if (o.above !== undefined) words.push(`above ${o.above}`);
  if (o.min !== undefined && o.max !== undefined) words.push(`from ${o.min} to ${o.max}`);
  else if (o.min !== undefined) words.push(`${o.min} or more`);
  else if (o.max !== undefined) words.push(`at most ${o.max}`);
  if (o.above !== undefined && o.max !== undefined) words.splice(1, 2, `above ${o.above}, at most ${o.max}`);
  return {
    parse(raw) {
      const n = Number(raw);
      if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(raw) || !Number.isFinite(n)) throw new ValueRejected();
      if (o.whole && !Number.isSafeInteger(n)) throw new ValueRejected();
      if (o.min !== undefined && n < o.min) throw new ValueRejected();
      if (o.max !== undefined && n > o.max) throw new ValueRejected();
      if (o.above !== undefined && n <= o.above) throw new ValueRejected();
      return n;
    },
    accepts: words.join(' '),
  };
}

/** A URL with one of the given schemes (`https`, `redis` ...). */
export function url(...schemes: string[]): Parser<string> {
  return {
    parse(raw) {
      let u: URL;
      try {
        u = new URL(raw);
      } catch {
        throw new ValueRejected();
      }
      if (!schemes.includes(u.protocol.replace(/:$/, ''))) throw new ValueRejected();
      return raw;
    },
    accepts: `a ${schemes.map((s) => `${s}://`).join(' or ')} URL`,
  };
}

export function matching(re: RegExp, accepts: string): Parser<string> {
  return {
    parse(raw) {
      if (!re.test(raw)) throw new ValueRejected();
      return raw;
    },
    accepts,
  };
}

/** A file that exists (read when the process starts: a missing one stops it, naming the variable). */
export function existingFile(what: string): Parser<string> {
  return {
    parse(raw) {
      const p = path.resolve(raw);
      if (!existsSync(p) || !statSync(p).isFile()) throw new ValueRejected();
      return p;
    },
    accepts: `the path of an existing ${what} file`,
  };
}

export const hostPorts: Parser<string> = matching(
  /^\s*\[?[A-Za-z0-9_.:-]+\]?:\d{1,5}(\s*,\s*\[?[A-Za-z0-9_.:-]+\]?:\d{1,5})*\s*,?\s*$/,
  'host:port, or several separated by commas',
);

export const jsonObject: Parser<Record<string, unknown>> = {
  parse(raw) {
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw new ValueRejected();
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ValueRejected();
    return v as Record<string, unknown>;
  },
  accepts: 'a JSON object',
};
