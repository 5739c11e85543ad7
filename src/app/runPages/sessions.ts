import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { botKey } from '../../queue/keys.js';

/**
 * The server side of run-page sessions: per login, a random session version in Redis that every session cookie of
 * that login carries. A page accepts a cookie only while its version is the stored one, so signing out (which
 * deletes it) revokes every copy of every session of that login at once, on every app replica and across
 * restarts. The key lives a little longer than a session and is renewed by each sign-in; a login without one has
 * no valid session.
 */
export interface SessionVersions {
  /** The version a new session carries (the current one, or a new one when there is none). */
  begin(login: string, sessionSeconds: number): Promise<string>;
  /** Whether `version` is still the login's current one. */
  holds(login: string, version: string): Promise<boolean>;
  /** Ends every session of the login. */
  revoke(login: string): Promise<void>;
}

/** Redis keys `<prefix>:run-session:<login>`, lower-cased (GitHub logins are case-insensitive). */
export function redisSessionVersions(redis: Pick<Redis, 'multi' | 'get' | 'del'>): SessionVersions {
  const key = (login: string) => botKey('run-session', login.toLowerCase());
  return {
    async begin(login, sessionSeconds) {
      const ttl = sessionSeconds + 60;
      const fresh = randomBytes(18).toString('base64url');
      const replies = await redis
        .multi()
        .set(key(login), fresh, 'EX', ttl, 'NX')
        .expire(key(login), ttl)
        .get(key(login))
        .exec();
      const [err, version] = replies?.[2] ?? [new Error('the session transaction was discarded'), null];
      if (err) throw err;
      if (typeof version !== 'string') throw new Error('the session version vanished while it was written');
      return version;
    },
    async holds(login, version) {
      return version.length > 0 && (await redis.get(key(login))) === version;
    },
    async revoke(login) {
      await redis.del(key(login));
    },
  };
}
