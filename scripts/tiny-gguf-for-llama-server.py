"""
Writes a tiny Qwen3 GGUF (byte-level vocab, Qwen3.5's chat template) so a real llama.cpp
`llama-server --jinja` can be run on a machine without model downloads. The model knows nothing, but its
next-token preferences are fixed by construction: every layer's output projection is zero and every token
embeds to the same vector, so the logits are the same at every step and rank <|im_end|> first, <tool_call>
second, "K" and "\n" next. So with `tool_choice: "auto"` it stops at once; with `"required"` (grammar-
constrained: end of turn not allowed before a call) it opens a tool call at once and the grammar fills it
(non-string arguments), which llama-server parses into `tool_calls`; with end of turn and <tool_call>
banned by `logit_bias` it "reasons" in Ks. That is what the recorded fixtures and `frognano doctor`'s probe need.

Usage: python3 scripts/tiny-gguf-for-llama-server.py LLAMA_CPP_DIR OUT.gguf
Needs numpy and llama.cpp's own gguf-py (LLAMA_CPP_DIR/gguf-py); no torch, no hub.
"""
import sys
from pathlib import Path

import numpy as np

llama_dir, out = Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, str(llama_dir / "gguf-py"))
import gguf  # noqa: E402


def bytes_to_unicode() -> dict[int, str]:
    # GPT-2's reversible byte -> printable character map, which byte-level BPE vocabularies use.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


byte_chars = bytes_to_unicode()
tokens = [byte_chars[b] for b in range(256)]
types = [gguf.TokenType.NORMAL] * 256
merges = []
for a, b in [("Ġ", "t"), ("Ġ", "a"), ("i", "n"), ("e", "r"), ("o", "n")]:
    merges.append(f"{a} {b}")
    tokens.append(a + b)
    types.append(gguf.TokenType.NORMAL)
control = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
user_defined = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"]
first_special = len(tokens)
tokens += control + user_defined
types += [gguf.TokenType.CONTROL] * len(control) + [gguf.TokenType.USER_DEFINED] * len(user_defined)
n_vocab = len(tokens)
eot, im_end = first_special, first_special + 2

n_embd, n_head, n_kv, head_dim, n_ff, n_layer, n_ctx = 64, 4, 2, 16, 128, 2, 8192
w = gguf.GGUFWriter(out, "qwen3")
w.add_name("frognano-tiny-random")
w.add_context_length(n_ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_kv)
w.add_key_length(head_dim)
w.add_value_length(head_dim)
w.add_rope_freq_base(1_000_000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre("qwen2")
w.add_token_list(tokens)
w.add_token_types(types)
w.add_token_merges(merges)
w.add_bos_token_id(eot)
w.add_eos_token_id(im_end)
w.add_pad_token_id(eot)
w.add_add_bos_token(False)
w.add_chat_template((llama_dir / "models/templates/Qwen3.5-4B.jinja").read_text())

rng = np.random.default_rng(42)


def rand(*shape: int, scale: float = 0.02) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# Every token embeds to u; with the layers adding nothing, the final hidden state is u / rms(u) at every step, and
# output row t = score_t * h / |h|^2 makes logit_t = score_t.
u = rng.standard_normal(n_embd).astype(np.float32)
h = u / np.sqrt(np.mean(u * u) + 1e-6)
scores = rng.standard_normal(n_vocab) * 0.5
scores[im_end] = 10.0
scores[first_special + 3] = 9.0  # <tool_call>
scores[ord("K")] = 8.5
scores[ord("\n")] = 8.0  # byte tokens have their byte value as id
w.add_tensor("token_embd.weight", np.tile(u, (n_vocab, 1)))
w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
w.add_tensor("output.weight", (scores[:, None] * h[None, :] / float(h @ h)).astype(np.float32))
for i in range(n_layer):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor(p + "attn_q.weight", rand(n_head * head_dim, n_embd))
    w.add_tensor(p + "attn_k.weight", rand(n_kv * head_dim, n_embd))
    w.add_tensor(p + "attn_v.weight", rand(n_kv * head_dim, n_embd))
    w.add_tensor(p + "attn_output.weight", np.zeros((n_embd, n_head * head_dim), np.float32))
    w.add_tensor(p + "attn_q_norm.weight", np.ones(head_dim, np.float32))
    w.add_tensor(p + "attn_k_norm.weight", np.ones(head_dim, np.float32))
    w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor(p + "ffn_gate.weight", rand(n_ff, n_embd))
    w.add_tensor(p + "ffn_up.weight", rand(n_ff, n_embd))
    w.add_tensor(p + "ffn_down.weight", np.zeros((n_embd, n_ff), np.float32))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(f"wrote {out}: vocab {n_vocab}, {n_layer} layers, n_embd {n_embd}")
