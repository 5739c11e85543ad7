import { createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { check, type CheckResult } from './check.js';

const NAME = 'GitHub App';

/**
 * The App's credentials as Probot reads them: APP_ID, the private key (PRIVATE_KEY, possibly base64 or
 * with literal "\n", or a PRIVATE_KEY_PATH file) and WEBHOOK_SECRET. The key must parse as a private key.
 * Only the GitHub App needs them, so when none is set this is a warning; a half or broken setup fails.
 * Nothing secret is ever printed.
 */
export async function checkGitHubApp(env: NodeJS.ProcessEnv, cwd = process.cwd()): Promise<CheckResult> {
  const anySet = Boolean(env.APP_ID || env.PRIVATE_KEY || env.PRIVATE_KEY_PATH || env.WEBHOOK_SECRET);
  if (!anySet) {
    return check.warn(
      NAME,
      'not configured (APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET unset)',
      'only the GitHub App needs these: run `npm start` once to register the App, or copy them from the App settings page into .env',
    );
  }
  const problems: string[] = [];
  if (!env.APP_ID) problems.push('APP_ID is not set');
  else if (!/^\d+$/.test(env.APP_ID.trim()))
    problems.push(`APP_ID must be the App's numeric id, got '${env.APP_ID.slice(0, 40)}'`);
  if (!env.WEBHOOK_SECRET) problems.push('WEBHOOK_SECRET is not set');

  let keyDetail = '';
  const key = await loadKeyText(env, cwd);
  if ('error' in key) problems.push(key.error);
  else {
    try {
      const k = createPrivateKey(key.pem);
      const bits = k.asymmetricKeyDetails?.modulusLength;
      keyDetail = `${k.asymmetricKeyType?.toUpperCase() ?? 'private'} key${bits ? ` (${bits} bits)` : ''} from ${key.source}`;
      if (k.asymmetricKeyType !== 'rsa')
        problems.push(`the private key is ${k.asymmetricKeyType}, GitHub App keys are RSA`);
    } catch (err) {
      problems.push(`the private key from ${key.source} does not parse (${(err as Error).message})`);
    }
  }
  if (problems.length > 0) {
    return check.fail(
      NAME,
      problems.join('; '),
      'take APP_ID, the .pem private key and the webhook secret from the App settings page (Settings > Developer settings > GitHub Apps)',
    );
  }
  return check.ok(NAME, `APP_ID ${env.APP_ID!.trim()}, ${keyDetail}, WEBHOOK_SECRET set`);
}

async function loadKeyText(
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ pem: string; source: string } | { error: string }> {
  if (env.PRIVATE_KEY) {
    let text = env.PRIVATE_KEY.trim();
    // Probot accepts the key base64-encoded or with its newlines written as "\n".
    if (!text.includes('-----BEGIN') && /^[A-Za-z0-9+/=\s]+$/.test(text))
      text = Buffer.from(text, 'base64').toString('utf8');
    text = text.replace(/\\n/g, '\n');
    return { pem: text, source: 'PRIVATE_KEY' };
  }
  if (env.PRIVATE_KEY_PATH) {
    const file = path.resolve(cwd, env.PRIVATE_KEY_PATH);
    try {
      return { pem: await readFile(file, 'utf8'), source: `PRIVATE_KEY_PATH ${file}` };
    } catch (err) {
      return {
        error: `PRIVATE_KEY_PATH ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
      };
    }
  }
  return { error: 'neither PRIVATE_KEY nor PRIVATE_KEY_PATH is set' };
}
