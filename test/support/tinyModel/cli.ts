/**
 * Writes a tiny model from the command line (see buildTinyModel.ts):
 *
 *   npx tsx test/support/tinyModel/cli.ts <outDir> [--hidden 256] [--layers 4] [--heads 4] [--merges 200]
 *     [--mrope] [--split-embedding] [--external-data]
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTinyModel, DEFAULT_TINY_CONFIG, type TinyModelConfig } from './buildTinyModel.js';

function parseCliArgs(argv: string[]): { outDir: string; overrides: Partial<TinyModelConfig> } {
  const [outDir, ...rest] = argv;
  if (!outDir || outDir.startsWith('--')) {
    throw new Error(
      'usage: tsx test/support/tinyModel/cli.ts <outDir> [--hidden N] [--layers N] [--heads N] [--merges N] [--mrope] [--split-embedding] [--external-data]',
    );
  }
  const overrides: Partial<TinyModelConfig> = {};
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i];
    const num = () => {
      const v = Number(rest[++i]);
      if (!Number.isInteger(v) || v <= 0) throw new Error(`${flag} needs a positive integer`);
      return v;
    };
    switch (flag) {
      case '--hidden': {
        const h = num();
        overrides.hiddenSize = h;
        overrides.intermediateSize = 2 * h;
        break;
      }
      case '--layers': {
        // Qwen3.5 pattern: three linear-attention layers, then one full-attention layer.
        const n = num();
        overrides.layerTypes = Array.from({ length: n }, (_, j) =>
          j % 4 === 3 || n === 1 ? 'full_attention' : 'linear_attention',
        );
        break;
      }
      case '--heads': {
        const n = num();
        overrides.numAttentionHeads = n;
        overrides.linearNumHeads = n;
        break;
      }
      case '--merges':
        overrides.numMerges = num();
        break;
      case '--mrope':
        overrides.mropePositionIds = true;
        break;
      case '--split-embedding':
        overrides.splitEmbedding = true;
        break;
      case '--external-data':
        overrides.externalData = true;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  if (overrides.hiddenSize) {
    const heads = overrides.numAttentionHeads ?? DEFAULT_TINY_CONFIG.numAttentionHeads;
    const d = overrides.hiddenSize / heads;
    if (!Number.isInteger(d) || d % 2) throw new Error('--hidden must be divisible by --heads into an even head size');
    overrides.headDim = d;
    overrides.linearKeyHeadDim = d;
    overrides.linearValueHeadDim = d;
  }
  return { outDir, overrides };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const { outDir, overrides } = parseCliArgs(process.argv.slice(2));
    await buildTinyModel(outDir, overrides);
    console.log(`tiny model written to ${path.resolve(outDir)}`);
  } catch (err) {
    console.error((err as Error).message);
    process.exitCode = 1;
  }
}
