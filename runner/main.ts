/**
 * `npm run runner`: reads `.env` (the environment wins), checks every setting the runner reads
 * (src/util/settings.ts; one that does not parse ends the process with exit code 2 and one line), and only then
 * loads the runner (service.ts), whose modules read settings when they are imported (the logger reads LOG_LEVEL).
 */
import path from 'node:path';
import { loadDotEnv } from '../src/util/dotenv.js';
import { redisConfigFromEnv } from '../src/queue/redisConfig.js';
import { checkSettingsOrExit } from '../src/util/settings.js';

loadDotEnv(path.join(process.cwd(), '.env'));
checkSettingsOrExit(process.env, 'runner', 'frognano runner', [redisConfigFromEnv]);
await import('./service.js');
