/** The tiny model's shape: what `buildTinyModel` takes, with its defaults and the tokenizer's special tokens. */
export type LayerType = 'full_attention' | 'linear_attention';

export interface TinyModelConfig {
  hiddenSize: number;
  intermediateSize: number;
  /** Qwen3.5 interleaves linear-attention layers with a full-attention layer every few layers. */
  layerTypes: LayerType[];
  numAttentionHeads: number;
  headDim: number;
  linearNumHeads: number;
  linearKeyHeadDim: number;
  linearValueHeadDim: number;
  linearConvKernel: number;
  /** Number of BPE merges learned from the built-in corpus (the vocabulary is 256 bytes + merges + specials). */
  numMerges: number;
  /** Qwen3.5 (a VL model) takes position_ids as [3, batch, seq] (M-RoPE); plain text exports take [batch, seq]. */
  mropePositionIds: boolean;
  /**
   * Write the transformers.js multimodal layout instead of one graph: onnx/embed_tokens.onnx (input_ids ->
   * inputs_embeds) and onnx/decoder_model_merged.onnx taking inputs_embeds, as the Qwen3.5 export does.
   */
  splitEmbedding: boolean;
  /**
   * Makes the model say a fixed token sequence: the logits computed at absolute position p >= `startPosition`
   * (which pick the token for position p + 1) get a large bonus for `tokenIds[p - startPosition]`; so
   * `startPosition = promptTokens - 1` scripts the answer to a known prompt. Tests use it to drive real generations that contain
   * tool calls and end-of-turn tokens; the rest of the graph is unchanged.
   */
  script?: { startPosition: number; tokenIds: number[] };
  /** Store the weights in `<graph file>_data` next to the graph, as exports of models over 2 GB must. */
  externalData: boolean;
  /**
   * Pads the embedding and the LM head to this many rows (Qwen3.5's real vocabulary is 248,320), so logits have
   * the real model's size; the extra ids are never produced by the tokenizer. Default: the tokenizer's size.
   */
  vocabSize?: number;
  /** Add a `num_logits_to_keep` input: the graph then computes logits for the last N positions only. */
  logitsToKeep?: boolean;
  seed: number;
}

export const DEFAULT_TINY_CONFIG: TinyModelConfig = {
  hiddenSize: 64,
  intermediateSize: 128,
  layerTypes: ['linear_attention', 'full_attention'],
  numAttentionHeads: 4,
  headDim: 16,
  linearNumHeads: 4,
  linearKeyHeadDim: 16,
  linearValueHeadDim: 16,
  linearConvKernel: 4,
  numMerges: 120,
  mropePositionIds: false,
  splitEmbedding: false,
  externalData: false,
  seed: 1234,
};

export const SPECIAL_TOKENS = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<think>',
  '</think>',
  '<tool_call>',
  '</tool_call>',
  '<tool_response>',
  '</tool_response>',
] as const;
