/**
 * main.ts imports this before anything else: ES modules run in import order, so `.env` is in process.env
 * before the logger module reads LOG_LEVEL (Probot would read `.env` only later, in run()).
 */
import path from 'node:path';
import { loadDotEnv } from '../ops/dotenv.js';

loadDotEnv(path.join(process.cwd(), '.env'));
