import { PLAIN_KEY_PREFIX } from './redisConfig.js';

/**
 * The bot's own Redis keys (BullMQ names its own): `<prefix>:<part>:<part>…`. Every key builder goes through
 * `botKey`, so one prefix covers them all; in a Redis Cluster that prefix is a hash tag (`{frognano}`), which puts
 * every key in one slot and keeps MULTI and scripts over several keys legal. The process sets it once at start-up
 * from its Redis settings (`redisConfigFromEnv().keyPrefix`), before any key is built.
 */
let prefix = PLAIN_KEY_PREFIX;

export function botKey(...parts: string[]): string {
  return [prefix, ...parts].join(':');
}

export function botKeyPrefix(): string {
  return prefix;
}

export function setBotKeyPrefix(p: string): void {
  prefix = p;
}
