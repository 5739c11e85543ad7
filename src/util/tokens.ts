/**
 * Rough token count: UTF-8 bytes / 4 (the usual fallback of chat harnesses, and upstream Leaf's last one). Used only
 * where no tokenizer is at hand: the replay backend, and the Leaf loop when a backend cannot count tokens itself.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

/** The same estimate for a whole prompt: the messages and the tool specs, each as JSON. */
export function estimatePromptTokens(messages: readonly unknown[], tools: readonly unknown[]): number {
  return estimateTokens(JSON.stringify(messages)) + estimateTokens(JSON.stringify(tools));
}
