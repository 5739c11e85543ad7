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

The export itself is scripts/export_onnx.py's (the exporter `frognano model export` runs); this script makes the
tiny model, its tokenizer and the reference data. With --checkpoint-only it writes the model in the Hugging Face
layout (model.safetensors, config.json, tokenizer, chat template) with reference.json and no ONNX: the input of the
end-to-end export test (test/cli/modelExport.test.ts).

A development step, not part of `npm test`. Needs Python 3.11 with the packages of scripts/export-requirements.txt:
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -r scripts/export-requirements.txt
  /tmp/venv/bin/python scripts/build-qwen35-fixture.py [--out test/fixtures/qwen35-tiny] [--checkpoint-only]
"""
import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from tokenizers import Regex
from transformers import PreTrainedTokenizerFast, Qwen3_5Config, Qwen3_5ForConditionalGeneration

ROOT = Path(__file__).resolve().parent.parent
# The one exporter (scripts/export_onnx.py, what `frognano model export` runs): this script only makes the tiny model,
# its tokenizer and the reference data.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_onnx import OrtRunner, export_graphs, make_variants, torch_greedy, torch_last_logits  # noqa: E402
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


def write_checkpoint(out: Path, vocab: int, seed: int, weights: bool):
    """The tiny model in the Hugging Face layout: tokenizer, chat template, configs. Returns the model and the template."""
    template = TEMPLATE_FILE.read_text()
    tok = build_tokenizer(vocab)
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
    randomize(hf, seed)
    hf.config.architectures = ["Qwen3_5ForConditionalGeneration"]
    hf.config.save_pretrained(str(out))
    if weights:
        hf.save_pretrained(str(out))  # model.safetensors; before generation_config.json, which it would overwrite
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": None, "eos_token_id": [im_end, eot], "pad_token_id": eot, "do_sample": True,
                    "temperature": 0.6, "top_p": 0.95, "top_k": 20}, indent=2) + "\n"
    )
    return hf, template


def reference_prompts(out: Path, template: str):
    """Prompts from transformers' own apply_chat_template, and their token ids."""
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
    return convs, prompts, ids


def export_check(hf, onnx_dir: Path, first, ref_logits, greedy) -> dict:
    """onnxruntime vs PyTorch at export time: prefill in two chunks, then 30 decode steps, for every weight type."""
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
    return report


def main() -> None:
    logging.getLogger("onnxruntime.quantization").setLevel(logging.WARNING)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "test" / "fixtures" / "qwen35-tiny"))
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=20260301)
    ap.add_argument(
        "--checkpoint-only",
        action="store_true",
        help="write the Hugging Face checkpoint (safetensors) and reference.json, no ONNX: the input of `frognano model export`",
    )
    args = ap.parse_args()
    out = Path(args.out)
    torch.manual_seed(args.seed)

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    hf, template = write_checkpoint(out, args.vocab, args.seed, weights=args.checkpoint_only)
    report = None
    if not args.checkpoint_only:
        (out / ".gitattributes").write_text("# Protobuf graphs: binary, never diffed or merged as text.\n*.onnx binary\n")
        onnx_dir = out / "onnx"
        onnx_dir.mkdir()
        export_graphs(hf, onnx_dir)
        make_variants(onnx_dir, ["fp16", "q4"])

    convs, prompts, ids = reference_prompts(out, template)
    first = ids["first"]
    ref_logits = torch_last_logits(hf, first)
    greedy = torch_greedy(hf, first, 30)
    if not args.checkpoint_only:
        report = export_check(hf, out / "onnx", first, ref_logits, greedy)

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
