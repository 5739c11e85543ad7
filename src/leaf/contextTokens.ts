import type { ModelBackend } from '../inference/types.js';
import { estimateTokens } from '../util/tokens.js';
import type { TrajectoryMessage } from './trajectoryFormat.js';

/**
 * Upstream's accounting of what tool messages add to the context (agent.py _count_message_tokens): the tokens of
 * their compact JSON. Counted with the backend's tokenizer when it has one (a user message holding the JSON, less
 * an empty one), else upstream's last fallback, UTF-8 bytes / 4.
 */
export class ToolMessageCounter {
  private baseline: number | undefined;
  constructor(private readonly backend: ModelBackend) {}

  async count(messages: TrajectoryMessage[]): Promise<number> {
    if (!messages.length) return 0;
    const serialized = JSON.stringify(messages);
    if (this.backend.countTokens) {
      try {
        this.baseline ??= await this.backend.countTokens([{ role: 'user', content: '' }], []);
        const n = await this.backend.countTokens([{ role: 'user', content: serialized }], []);
        if (n > this.baseline) return n - this.baseline;
      } catch {
        /* the estimate below */
      }
    }
    return estimateTokens(serialized);
  }
}
