/**
 * `npm start`: reads `.env` (the environment wins), checks every setting the app reads (src/util/settings.ts; one
 * that does not parse ends the process with exit code 2 and one line), and only then loads the server (server.ts).
 * The order matters: modules read settings when they are imported (the logger reads LOG_LEVEL), so `.env` must be
 * in process.env before the first of them loads, hence the dynamic import.
 */
import path from 'node:path';
import { loadDotEnv } from '../util/dotenv.js';
import { redisConfigFromEnv } from '../queue/redisConfig.js';
import { checkSettingsOrExit } from '../util/settings.js';

loadDotEnv(path.join(process.cwd(), '.env'));
checkSettingsOrExit(process.env, 'app', 'frognano app', [redisConfigFromEnv]);
await import('./server.js');
