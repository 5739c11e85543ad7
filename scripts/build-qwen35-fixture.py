#!/usr/bin/env python3
"""
Builds test/fixtures/qwen35-tiny: a tiny random-weight model with the real Qwen3.5 architecture
(Qwen3_5ForConditionalGeneration from transformers 5: 3 gated-delta-net linear-attention layers to 1 gated
full-attention layer, head_dim 256, partial M-RoPE with position ids [3, batch, seq]) exported the way the
transformers.js / onnx-community Qwen3.5 exports are laid out:

  onnx/embed_tokens.onnx            input_ids -> inputs_embeds
  onnx/decoder_model_merged.onnx    inputs_embeds, attention_mask, position_ids [3, b, s],
                                    past_conv.N, past_recurrent.N (linear layers), past_key_values.N.key/value
                                    -> logits, present_conv.N, present_recurrent.N, present.N.key/value
  plus the _fp16 and _q4 variants of both files, a byte-level BPE tokenizer with Qwen's special tokens, the
  official Qwen3.5 chat template (chat_template.jinja, as transformers 5 saves it), config.json and
  generation_config.json.

It checks onnxruntime against PyTorch at export time and writes reference.json: prompts rendered by transformers'
apply_chat_template, their token ids, PyTorch's logits and 30 greedy ids. The tests in
test/inference/onnxQwen35.test.ts compare the project's onnx backend with these.

A development step, not part of `npm test`. Needs Python 3.11 with torch (CPU), transformers>=5, onnx,
onnxruntime, onnxscript:
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch transformers onnx onnxruntime onnxscript
  /tmp/venv/bin/python scripts/build-qwen35-fixture.py [--out test/fixtures/qwen35-tiny]
"""
import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from torch import nn
from torch._higher_order_ops.scan import scan
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from tokenizers import Regex
from transformers import PreTrainedTokenizerFast, Qwen3_5Config, Qwen3_5ForConditionalGeneration

ROOT = Path(__file__).resolve().parent.parent
# The official Qwen3.5 chat template (tools in the system turn, qwen3_coder XML tool calls, `<think>` only after the
# last user query): its one copy, which the Leaf prompt conformance test reads too (test/fixtures/qwen3.5-chat-template/
# README.md says where it comes from).
TEMPLATE_FILE = ROOT / "test" / "fixtures" / "qwen35-tiny" / "chat_template.jinja"

# Qwen2/3 pre-tokenizer split (the byte-level BPE of the Qwen family).
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Added but not special in Qwen3.5's tokenizer: they decode as text.
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Read",
            "description": "Reads a file from the local filesystem.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "The absolute path to the file to read"},
                    "offset": {"type": "integer", "description": "The line number to start reading from."},
                },
                "required": ["file_path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Executes a given bash command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command to execute"}},
                "required": ["command"],
            },
        },
    },
]


def corpus() -> list[str]:
    template = TEMPLATE_FILE.read_text()
    text = [template, json.dumps(TOOLS, indent=2), json.dumps(TOOLS)]
    text += [
        "You are a software engineering agent working in a checked-out repository. Make the tests pass.",
        "The test runner output will show the failure. Running the tests first.",
        "def parse(value):\n    return int(value)\n\nexport function add(a: number, b: number) { return a + b; }\n",
        "Exit code: 0\nSTDOUT:\nok\nSTDERR:\n",
        "héllo wörld ∑ 🐸 naïve café 日本語",
    ]
    return text * 4


def build_tokenizer(vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(SPECIAL) - len(ADDED),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.add_special_tokens(SPECIAL)
    tok.add_tokens(ADDED)
    return tok


def tiny_config(vocab_size: int, im_end: int, eot: int) -> Qwen3_5Config:
    text = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=256,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=32,
        linear_value_head_dim=32,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        max_position_embeddings=262144,
        rms_norm_eps=1e-6,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000000,
            "partial_rotary_factor": 0.25,
            "mrope_section": [11, 11, 10],
            "mrope_interleaved": True,
        },
        eos_token_id=im_end,
        pad_token_id=eot,
        tie_word_embeddings=False,
    )
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, num_position_embeddings=16)
    cfg = Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    cfg.text_config._attn_implementation = "eager"
    return cfg


def randomize(model: nn.Module, seed: int) -> None:
    """Random weights everywhere (norm weights too), scaled so activations stay in a sensible range."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.rand(p.shape, generator=g) * 8 + 0.5))
            elif name.endswith("dt_bias"):
                p.copy_(torch.rand(p.shape, generator=g) * 2 - 1)
            elif p.ndim == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                fan_in = p.shape[-1] if p.ndim == 2 else p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in))


def l2norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)


def delta_step(state, xs):
    """One token of the gated delta rule (transformers' torch_recurrent_gated_delta_rule, per step)."""
    q, k, v, g, beta = xs
    state = state * g.exp()[..., None, None]
    kv_mem = (state * k.unsqueeze(-1)).sum(dim=-2)
    delta = (v - kv_mem) * beta.unsqueeze(-1)
    state = state + k.unsqueeze(-1) * delta.unsqueeze(-2)
    out = (state * q.unsqueeze(-1)).sum(dim=-2)
    return state.clone(), out


class ExportDecoder(nn.Module):
    """The language model of Qwen3_5ForConditionalGeneration with its caches as explicit inputs and outputs."""

    def __init__(self, hf: Qwen3_5ForConditionalGeneration):
        super().__init__()
        self.lm = hf.model.language_model
        self.lm_head = hf.lm_head
        self.cfg = hf.config.text_config

    def linear_attn(self, la, x, conv_state, rec_state):
        b, s, _ = x.shape
        k_size = conv_state.shape[-1]
        qkv = la.in_proj_qkv(x).transpose(1, 2)
        z = la.in_proj_z(x).reshape(b, s, -1, la.head_v_dim)
        beta = la.in_proj_b(x).sigmoid()
        g = -la.A_log.float().exp() * F.softplus(la.in_proj_a(x).float() + la.dt_bias)
        cat = torch.cat([conv_state, qkv], dim=-1)
        new_conv = cat[:, :, -k_size:]
        conv = F.conv1d(cat, la.conv1d.weight, None, groups=cat.shape[1])[:, :, -s:]
        conv = F.silu(conv).transpose(1, 2)
        q, k, v = torch.split(conv, [la.key_dim, la.key_dim, la.value_dim], dim=-1)
        q = q.reshape(b, s, -1, la.head_k_dim)
        k = k.reshape(b, s, -1, la.head_k_dim)
        v = v.reshape(b, s, -1, la.head_v_dim)
        rep = la.num_v_heads // la.num_k_heads
        if rep > 1:
            q = q.repeat_interleave(rep, dim=2)
            k = k.repeat_interleave(rep, dim=2)
        q = l2norm(q) * (q.shape[-1] ** -0.5)
        k = l2norm(k)
        # Scan over the sequence: [s, b, heads, dim]
        xs = (q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), g.transpose(0, 1), beta.transpose(0, 1))
        new_rec, out = scan(delta_step, rec_state, xs, dim=0)
        out = out.transpose(0, 1).reshape(-1, la.head_v_dim)
        out = la.norm(out, z.reshape(-1, la.head_v_dim)).reshape(b, s, -1)
        return la.out_proj(out), new_conv, new_rec

    def full_attn(self, at, x, cos, sin, mask, past_k, past_v):
        from transformers.models.qwen3_5.modeling_qwen3_5 import apply_rotary_pos_emb, repeat_kv

        b, s, _ = x.shape
        shape = (b, s, -1, at.head_dim)
        q, gate = torch.chunk(at.q_proj(x).view(b, s, -1, at.head_dim * 2), 2, dim=-1)
        gate = gate.reshape(b, s, -1)
        q = at.q_norm(q.view(shape)).transpose(1, 2)
        k = at.k_norm(at.k_proj(x).view(shape)).transpose(1, 2)
        v = at.v_proj(x).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        kk = repeat_kv(k, at.num_key_value_groups)
        vv = repeat_kv(v, at.num_key_value_groups)
        w = torch.matmul(q, kk.transpose(2, 3)) * at.scaling + mask
        w = torch.softmax(w.float(), dim=-1).to(q.dtype)
        o = torch.matmul(w, vv).transpose(1, 2).reshape(b, s, -1)
        o = o * torch.sigmoid(gate)
        return at.o_proj(o), k, v

    def forward(self, inputs_embeds, attention_mask, position_ids, past):
        x = inputs_embeds
        b, s, _ = x.shape
        total = attention_mask.shape[1]
        past_len = total - s
        # Causal mask over [past + new] keys, with padding from attention_mask.
        qpos = torch.arange(s, device=x.device)[:, None] + past_len
        kpos = torch.arange(total, device=x.device)[None, :]
        allowed = (kpos <= qpos)[None, None] & (attention_mask[:, None, None, :] > 0)
        mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min).to(x.dtype)
        cos, sin = self.lm.rotary_emb(x, position_ids)
        outputs = []
        i = 0
        for layer, kind in zip(self.lm.layers, self.cfg.layer_types):
            h = layer.input_layernorm(x)
            if kind == "linear_attention":
                h, c, r = self.linear_attn(layer.linear_attn, h, past[i], past[i + 1])
            else:
                h, c, r = self.full_attn(layer.self_attn, h, cos, sin, mask, past[i], past[i + 1])
            outputs += [c, r]
            i += 2
            x = x + h
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = self.lm_head(self.lm.norm(x))
        return (logits, *outputs)


class ExportEmbed(nn.Module):
    def __init__(self, hf):
        super().__init__()
        self.embed = hf.model.language_model.embed_tokens

    def forward(self, input_ids):
        return self.embed(input_ids)


def state_names(cfg):
    ins, outs = [], []
    for n, kind in enumerate(cfg.layer_types):
        if kind == "linear_attention":
            ins += [f"past_conv.{n}", f"past_recurrent.{n}"]
            outs += [f"present_conv.{n}", f"present_recurrent.{n}"]
        else:
            ins += [f"past_key_values.{n}.key", f"past_key_values.{n}.value"]
            outs += [f"present.{n}.key", f"present.{n}.value"]
    return ins, outs


def empty_states(hf, dtype=torch.float32, past=0):
    cfg = hf.config.text_config
    states = []
    for kind in cfg.layer_types:
        if kind == "linear_attention":
            conv_dim = 2 * cfg.linear_num_key_heads * cfg.linear_key_head_dim + cfg.linear_num_value_heads * cfg.linear_value_head_dim
            states.append(torch.zeros(1, conv_dim, cfg.linear_conv_kernel_dim, dtype=dtype))
            states.append(torch.zeros(1, cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim, dtype=dtype))
        else:
            states.append(torch.zeros(1, cfg.num_key_value_heads, past, cfg.head_dim, dtype=dtype))
            states.append(torch.zeros(1, cfg.num_key_value_heads, past, cfg.head_dim, dtype=dtype))
    return states


def export(hf, onnx_dir: Path) -> None:
    dec = ExportDecoder(hf).eval()
    ins, outs = state_names(hf.config.text_config)
    s, past = 5, 3
    emb = torch.randn(1, s, hf.config.text_config.hidden_size)
    mask = torch.ones(1, past + s, dtype=torch.int64)
    pos = (torch.arange(s) + past).view(1, 1, s).expand(3, 1, s).contiguous()
    states = [t.normal_() if t.numel() else t for t in empty_states(hf, past=past)]
    # Sizes: batch fixed at 1 for states' shapes except the sequence axis of the KV cache.
    seq = torch.export.Dim("sequence_length", min=1, max=1 << 20)
    total = torch.export.Dim("total_sequence_length", min=2, max=1 << 21)
    past_dim = torch.export.Dim("past_sequence_length", min=0, max=1 << 20)
    state_dyn = tuple({2: past_dim} if name.startswith("past_key_values") else None for name in ins)
    dyn = ({1: seq}, {1: total}, {2: seq}, state_dyn)
    with torch.no_grad():
        program = torch.onnx.export(
            dec,
            (emb, mask, pos, tuple(states)),
            input_names=["inputs_embeds", "attention_mask", "position_ids", *ins],
            output_names=["logits", *outs],
            dynamic_shapes=dyn,
            dynamo=True,
            optimize=True,
            external_data=False,
        )
    program.save(str(onnx_dir / "decoder_model_merged.onnx"), external_data=False)

    with torch.no_grad():
        eprog = torch.onnx.export(
            ExportEmbed(hf).eval(),
            (torch.tensor([[1, 2, 3]]),),
            input_names=["input_ids"],
            output_names=["inputs_embeds"],
            dynamic_shapes=({0: torch.export.Dim("batch_size", min=1, max=64), 1: torch.export.Dim("sequence_length", min=1, max=1 << 20)},),
            dynamo=True,
            optimize=True,
        )
    eprog.save(str(onnx_dir / "embed_tokens.onnx"), external_data=False)


def to_fp16(src: Path, dst: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(src))
    # keep_io_types=False: inputs_embeds, states and logits become float16, as in the hub's _fp16 files.
    half = convert_float_to_float16(model, keep_io_types=False, disable_shape_infer=True)
    onnx.save(half, str(dst))


def to_q4(src: Path, dst: Path, gather: bool) -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = onnx.load(str(src))
    kwargs = dict(block_size=32, is_symmetric=True)
    if gather:
        kwargs["op_types_to_quantize"] = ("Gather",)
        kwargs["quant_axes"] = (("Gather", 1),)
    q = MatMulNBitsQuantizer(model, **kwargs)
    q.process()
    onnx.save(q.model.model, str(dst))


class OrtRunner:
    def __init__(self, onnx_dir: Path, suffix: str, hf):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.dec = ort.InferenceSession(str(onnx_dir / f"decoder_model_merged{suffix}.onnx"), opts)
        self.emb = ort.InferenceSession(str(onnx_dir / f"embed_tokens{suffix}.onnx"), opts)
        self.hf = hf
        self.ins, self.outs = state_names(hf.config.text_config)
        self.dtype = np.float16 if suffix == "_fp16" else np.float32

    def run(self, ids, states, past):
        e = self.emb.run(None, {"input_ids": np.array([ids], dtype=np.int64)})[0]
        s = len(ids)
        feeds = {
            "inputs_embeds": e.astype(self.dtype),
            "attention_mask": np.ones((1, past + s), dtype=np.int64),
            "position_ids": np.broadcast_to(np.arange(past, past + s, dtype=np.int64), (3, 1, s)).copy(),
        }
        for name, t in zip(self.ins, states):
            feeds[name] = t
        out = self.dec.run(None, feeds)
        return out[0][0, -1].astype(np.float32), out[1:]

    def fresh(self):
        return [t.numpy().astype(self.dtype) for t in empty_states(self.hf)]


def torch_last_logits(hf, ids) -> np.ndarray:
    with torch.no_grad():
        return hf(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float().numpy()


def torch_greedy(hf, ids, n) -> list[int]:
    ids = list(ids)
    out = []
    for _ in range(n):
        nxt = int(torch_last_logits(hf, ids).argmax())
        out.append(nxt)
        ids.append(nxt)
    return out


def conversations():
    system = {"role": "system", "content": "You are a software engineering agent working in a checked-out repository."}
    task = {"role": "user", "content": "Make the tests pass."}
    call = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The test runner output will show the failure.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": {"command": "npm test"}}}],
    }
    result = {"role": "tool", "tool_call_id": "c1", "name": "Bash", "content": "Exit code: 1\nSTDOUT:\nFAIL parse.test.ts"}
    read = {
        "role": "assistant",
        "content": "Reading the parser.",
        "reasoning_content": "Look at the source.",
        "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "Read", "arguments": {"file_path": "/repo/src/parse.ts", "offset": 2}}}],
    }
    read_result = {"role": "tool", "tool_call_id": "c2", "name": "Read", "content": "1\texport function parse(v) {\n2\t  return Number(v);\n3\t}"}
    answer = {"role": "assistant", "content": "Fixed the parser.", "reasoning_content": "Done."}
    follow = {"role": "user", "content": "Please also handle empty strings."}
    return {
        "first": [system, task],
        "tool_loop": [system, task, call, result, read, read_result],
        "follow_up": [system, task, call, result, read, read_result, answer, follow],
    }


def main() -> None:
    logging.getLogger("onnxruntime.quantization").setLevel(logging.WARNING)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "test" / "fixtures" / "qwen35-tiny"))
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=20260301)
    args = ap.parse_args()
    out = Path(args.out)
    torch.manual_seed(args.seed)

    if out.exists():
        shutil.rmtree(out)
    (out / "onnx").mkdir(parents=True)
    (out / ".gitattributes").write_text("# Protobuf graphs: binary, never diffed or merged as text.\n*.onnx binary\n")

    template = TEMPLATE_FILE.read_text()
    tok = build_tokenizer(args.vocab)
    vocab_size = tok.get_vocab_size()
    im_end = tok.token_to_id("<|im_end|>")
    eot = tok.token_to_id("<|endoftext|>")
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", model_max_length=262144)
    hf_tok.chat_template = template
    hf_tok.save_pretrained(str(out))
    # Name the class the hub's Qwen3.5 tokenizer_config.json names.
    tc_path = out / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text())
    tc["tokenizer_class"] = "Qwen2Tokenizer"
    tc.pop("chat_template", None)
    tc_path.write_text(json.dumps(tc, indent=2, ensure_ascii=False) + "\n")
    if not (out / "chat_template.jinja").exists():
        (out / "chat_template.jinja").write_text(template)
    assert (out / "chat_template.jinja").read_text() == template

    cfg = tiny_config(vocab_size, im_end, eot)
    hf = Qwen3_5ForConditionalGeneration(cfg).eval()
    randomize(hf, args.seed)
    hf.config.architectures = ["Qwen3_5ForConditionalGeneration"]
    hf.config.save_pretrained(str(out))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": None, "eos_token_id": [im_end, eot], "pad_token_id": eot, "do_sample": True,
                    "temperature": 0.6, "top_p": 0.95, "top_k": 20}, indent=2) + "\n"
    )

    onnx_dir = out / "onnx"
    export(hf, onnx_dir)
    to_fp16(onnx_dir / "decoder_model_merged.onnx", onnx_dir / "decoder_model_merged_fp16.onnx")
    to_fp16(onnx_dir / "embed_tokens.onnx", onnx_dir / "embed_tokens_fp16.onnx")
    to_q4(onnx_dir / "decoder_model_merged.onnx", onnx_dir / "decoder_model_merged_q4.onnx", gather=False)
    try:
        to_q4(onnx_dir / "embed_tokens.onnx", onnx_dir / "embed_tokens_q4.onnx", gather=True)
    except Exception as err:  # older onnxruntime: no Gather quantization
        print(f"embed_tokens_q4: Gather quantization unavailable ({err}); keeping float32 weights", file=sys.stderr)
        shutil.copy(onnx_dir / "embed_tokens.onnx", onnx_dir / "embed_tokens_q4.onnx")

    # Reference data: prompts from transformers' own apply_chat_template, PyTorch logits and greedy ids.
    reload = PreTrainedTokenizerFast.from_pretrained(str(out))
    assert reload.chat_template == template
    convs = conversations()
    prompts = {}
    for name, msgs in convs.items():
        prompts[name] = reload.apply_chat_template(msgs, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    prompts["first_no_thinking"] = reload.apply_chat_template(
        convs["first"], tools=TOOLS, add_generation_prompt=True, tokenize=False, enable_thinking=False
    )
    prompts["first_no_tools"] = reload.apply_chat_template(convs["first"], add_generation_prompt=True, tokenize=False)
    ids = {name: reload.encode(p, add_special_tokens=False) for name, p in prompts.items()}

    first = ids["first"]
    ref_logits = torch_last_logits(hf, first)
    greedy = torch_greedy(hf, first, 30)
    # onnxruntime vs PyTorch at export time: prefill in two chunks, then 30 decode steps.
    report = {}
    for suffix in ["", "_fp16", "_q4"]:
        r = OrtRunner(onnx_dir, suffix, hf)
        half = len(first) // 2
        _, st = r.run(first[:half], r.fresh(), 0)
        logits, st = r.run(first[half:], st, half)
        diff = float(np.abs(logits - ref_logits).max())
        gen, past = [], len(first)
        for _ in range(30):
            nxt = int(logits.argmax())
            gen.append(nxt)
            logits, st = r.run([nxt], st, past)
            past += 1
        same = sum(1 for a, b in zip(gen, greedy) if a == b)
        report[suffix or "fp32"] = {"max_abs_diff": diff, "greedy_matches": same}
        print(f"onnxruntime{suffix or ' fp32'} vs torch: logits max abs diff {diff:.3e}, greedy {same}/30", file=sys.stderr)
    if report["fp32"]["max_abs_diff"] > 5e-5 or report["fp32"]["greedy_matches"] != 30:
        raise SystemExit(f"fp32 export does not match PyTorch: {report['fp32']}")

    reference = {
        "generated_by": "scripts/build-qwen35-fixture.py",
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "onnxruntime": ort.__version__,
        "tools": TOOLS,
        "conversations": convs,
        "prompts": prompts,
        "prompt_ids": ids,
        "first_logits": [float(x) for x in ref_logits],
        "greedy_ids": greedy,
        "export_check": report,
    }
    (out / "reference.json").write_text(json.dumps(reference, ensure_ascii=False) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({total / 1e6:.1f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
