/**
 * Where stored rounds live, as plain objects under string keys: a directory on one machine (app and runner share
 * it) or an S3-API bucket for many nodes. The trajectory store (trajectoryStore.ts) does the JSON, the redaction
 * and the size bound on top; a backend only moves bytes, lists keys and forgets old ones.
 */
export interface ObjectStore {
  put(key: string, body: string): Promise<void>;
  /** null when there is no such object. */
  get(key: string): Promise<string | null>;
  /** Keys that start with `prefix`, in no promised order. */
  list(prefix: string): Promise<string[]>;
  /** Removes objects last written before `cutoff`; returns how many went. */
  deleteOlderThan(cutoff: Date): Promise<number>;
  /** True where nothing else removes old objects (a directory); an S3 bucket has its lifecycle rule. */
  readonly sweepsItself: boolean;
  /** Where the objects are, in words, for logs and `doctor` (never a credential). */
  readonly description: string;
}

/** Keys are made only from checked parts, so a crafted owner or repo name cannot reach outside its folder. */
export function checkKeyPart(part: string): string {
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(part) || part === '.' || part === '..')
    throw new Error(`not a valid key part: ${JSON.stringify(part)}`);
  return part;
}
