#!/usr/bin/env python3
"""
frognano's ONNX exporter for Qwen3.5 models (FrogNano-4B): a Hugging Face checkpoint directory (config.json,
*.safetensors, tokenizer, chat template) in, the directory the project's onnx backend loads out, in the layout of the
transformers.js / onnx-community Qwen3.5 exports:

  onnx/embed_tokens.onnx            input_ids -> inputs_embeds
  onnx/decoder_model_merged.onnx    inputs_embeds, attention_mask, position_ids [3, b, s],
                                    past_conv.N, past_recurrent.N (linear-attention layers),
                                    past_key_values.N.key/value (full-attention layers)
                                    -> logits, present_conv.N, present_recurrent.N, present.N.key/value
  onnx/*_fp16.onnx, onnx/*_q4.onnx  the weight-type variants asked for (--dtype), beside the fp32 graphs
  config.json, generation_config.json, tokenizer.json, tokenizer_config.json and the model's own chat template as
  chat_template.jinja (copied from the checkpoint, or taken out of its tokenizer_config.json).

The language model is traced with its caches as explicit inputs and outputs (ExportDecoder: the gated delta rule as a
torch scan, the gated full attention with the KV cache concatenated), so one graph does prefill and decode. After the
export, onnxruntime's fp32 logits are compared with PyTorch's on a short prompt (--no-check skips it).

One exporter: `frognano model export` runs this file, and scripts/build-qwen35-fixture.py imports it to make
test/fixtures/qwen35-tiny.

Usage:
  python3 scripts/export_onnx.py HF_DIR OUT_DIR [--dtype fp32,q4] [--no-check]

Needs Python >= 3.10 with the packages of scripts/export-requirements.txt (torch, transformers>=5, onnx, onnxscript,
onnxruntime). For FrogNano-4B (about 4.2e9 parameters) plan on: the fp32 graphs about 17 GB of disk (4 bytes a
parameter) plus each variant (fp16 about 8.5 GB, q4 about 3 GB); RAM about twice the fp32 size (the fp32 model in
PyTorch, then the traced graph or the onnxruntime session beside it), so 32 GB or more; tens of minutes on a CPU.
These are estimates from the parameter count, not measurements of the 4B export.
"""
import argparse
import json
import logging
import shutil
import sys
import time
from pathlib import Path

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch._higher_order_ops.scan import scan
except ImportError as err:  # the CLI checks first; this is for a run by hand
    sys.exit(f"export_onnx.py needs the Python package '{err.name}': pip install -r scripts/export-requirements.txt")

# onnx's protobuf limit: a graph whose weights are larger keeps them in an external data file beside it.
PROTOBUF_LIMIT = 1_800_000_000
# Weight types, with the file suffix each has in a hub export (the onnx backend's ONNX_DTYPES).
DTYPE_SUFFIX = {"fp32": "", "fp16": "_fp16", "q4": "_q4"}
# Files copied from the checkpoint when present (tokenizer and configs the backend or transformers.js read).
MODEL_FILES = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def text_config(hf):
    """Multimodal checkpoints (Qwen3_5ForConditionalGeneration) keep the language model's settings in text_config."""
    return getattr(hf.config, "text_config", None) or hf.config


def text_model(hf):
    return getattr(hf.model, "language_model", hf.model)


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
    """The language model of a Qwen3.5 checkpoint with its caches as explicit inputs and outputs."""

    def __init__(self, hf):
        super().__init__()
        self.lm = text_model(hf)
        self.lm_head = hf.lm_head
        self.cfg = text_config(hf)

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
        self.embed = text_model(hf).embed_tokens

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
    cfg = text_config(hf)
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


def is_big(hf) -> bool:
    """Whether the fp32 weights pass protobuf's 2 GB limit, so the graphs keep them in external data files."""
    return sum(p.numel() for p in hf.parameters()) * 4 > PROTOBUF_LIMIT


def save_onnx(model, dst: Path, big: bool) -> None:
    data = dst.with_name(dst.name + "_data")
    # onnx appends to an existing external data file: a rerun must start from none.
    data.unlink(missing_ok=True)
    if big:
        onnx.save(model, str(dst), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name)
    else:
        onnx.save(model, str(dst))


def remove_graph(onnx_dir: Path, base: str) -> None:
    """A graph and its external data (torch names it `<graph>.onnx.data`, save_onnx `<graph>.onnx_data`)."""
    for f in onnx_dir.glob(f"{base}.onnx*"):
        f.unlink()


def match_data_modes(onnx_dir: Path) -> None:
    """onnx writes external data files readable by their owner only; give them their graph's mode, so a runner
    that reads a shared model directory as another user can load them."""
    for data in list(onnx_dir.glob("*.onnx.data")) + list(onnx_dir.glob("*.onnx_data")):
        graph = onnx_dir / (data.name[: -len(".data")] if data.name.endswith(".onnx.data") else data.name[: -len("_data")])
        if graph.exists():
            data.chmod(graph.stat().st_mode & 0o777)


def export_graphs(hf, onnx_dir: Path, big: bool = False) -> None:
    """The fp32 decoder_model_merged.onnx and embed_tokens.onnx, traced with torch.onnx (dynamo)."""
    dec = ExportDecoder(hf).eval()
    ins, outs = state_names(text_config(hf))
    s, past = 5, 3
    emb = torch.randn(1, s, text_config(hf).hidden_size)
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
    remove_graph(onnx_dir, "decoder_model_merged")
    program.save(str(onnx_dir / "decoder_model_merged.onnx"), external_data=big)

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
    remove_graph(onnx_dir, "embed_tokens")
    eprog.save(str(onnx_dir / "embed_tokens.onnx"), external_data=big)


def to_fp16(src: Path, dst: Path, big: bool = False) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = onnx.load(str(src))
    # keep_io_types=False: inputs_embeds, states and logits become float16, as in the hub's _fp16 files.
    half = convert_float_to_float16(model, keep_io_types=False, disable_shape_infer=True)
    save_onnx(half, dst, big)


def to_q4(src: Path, dst: Path, gather: bool, big: bool = False) -> None:
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = onnx.load(str(src))
    kwargs = dict(block_size=32, is_symmetric=True)
    if gather:
        kwargs["op_types_to_quantize"] = ("Gather",)
        kwargs["quant_axes"] = (("Gather", 1),)
    q = MatMulNBitsQuantizer(model, **kwargs)
    q.process()
    save_onnx(q.model.model, dst, big)


def make_variants(onnx_dir: Path, dtypes, big: bool = False) -> None:
    """The _fp16 / _q4 graphs from the fp32 ones (decoder and embed of one weight type belong together)."""
    if "fp16" in dtypes:
        log("fp16: converting decoder_model_merged and embed_tokens")
        to_fp16(onnx_dir / "decoder_model_merged.onnx", onnx_dir / "decoder_model_merged_fp16.onnx", big)
        to_fp16(onnx_dir / "embed_tokens.onnx", onnx_dir / "embed_tokens_fp16.onnx", big)
    if "q4" in dtypes:
        log("q4: quantizing decoder_model_merged's MatMuls and embed_tokens' Gather to 4 bits (block 32)")
        to_q4(onnx_dir / "decoder_model_merged.onnx", onnx_dir / "decoder_model_merged_q4.onnx", gather=False, big=big)
        try:
            to_q4(onnx_dir / "embed_tokens.onnx", onnx_dir / "embed_tokens_q4.onnx", gather=True, big=big)
        except Exception as err:  # older onnxruntime: no Gather quantization
            log(f"embed_tokens_q4: Gather quantization unavailable ({err}); keeping float32 weights")
            # Saved again rather than copied: its weights must not point at the fp32 file's external data.
            save_onnx(onnx.load(str(onnx_dir / "embed_tokens.onnx")), onnx_dir / "embed_tokens_q4.onnx", big)


class OrtRunner:
    """One weight type of an exported directory in onnxruntime, fed the way the project's backend feeds it."""

    def __init__(self, onnx_dir: Path, suffix: str, hf):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.dec = ort.InferenceSession(str(onnx_dir / f"decoder_model_merged{suffix}.onnx"), opts)
        self.emb = ort.InferenceSession(str(onnx_dir / f"embed_tokens{suffix}.onnx"), opts)
        self.hf = hf
        self.ins, self.outs = state_names(text_config(hf))
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


def check_against_torch(hf, onnx_dir: Path, ids, steps: int = 4) -> dict:
    """onnxruntime's fp32 graphs vs PyTorch: last-token logits of a prompt and a few greedy tokens after it."""
    ref = torch_last_logits(hf, ids)
    greedy = torch_greedy(hf, ids, steps)
    r = OrtRunner(onnx_dir, "", hf)
    logits, st = r.run(list(ids), r.fresh(), 0)
    diff = float(np.abs(logits - ref).max())
    gen, past = [], len(ids)
    for _ in range(steps):
        nxt = int(logits.argmax())
        gen.append(nxt)
        logits, st = r.run([nxt], st, past)
        past += 1
    return {"max_abs_diff": diff, "greedy": gen, "torch_greedy": greedy, "same": gen == greedy}


def copy_model_files(hf_dir: Path, out: Path) -> str:
    """Configs and tokenizer files beside the graphs; the chat template as chat_template.jinja. Returns its source."""
    for name in MODEL_FILES:
        if (hf_dir / name).is_file():
            shutil.copy(hf_dir / name, out / name)
    if (out / "chat_template.jinja").is_file():
        return "chat_template.jinja"
    tc = json.loads((hf_dir / "tokenizer_config.json").read_text())
    template = tc.get("chat_template")
    if isinstance(template, list):  # [{"name": "default", "template": ...}, ...]
        template = next((t.get("template") for t in template if t.get("name") == "default"), None)
    if not isinstance(template, str):
        raise SystemExit(f"{hf_dir} has no chat template (chat_template.jinja, or chat_template in tokenizer_config.json)")
    (out / "chat_template.jinja").write_text(template)
    return "tokenizer_config.json"


def load_checkpoint(hf_dir: Path):
    import transformers

    cfg = transformers.AutoConfig.from_pretrained(str(hf_dir))
    arch = (getattr(cfg, "architectures", None) or ["Qwen3_5ForConditionalGeneration"])[0]
    cls = getattr(transformers, arch, None) or transformers.Qwen3_5ForConditionalGeneration
    # fp32 for the trace: the bf16 weights are widened once here, and every variant is made from the fp32 graphs.
    return cls.from_pretrained(str(hf_dir), dtype=torch.float32, attn_implementation="eager").eval()


def check_prompt(hf_dir: Path, vocab_size: int) -> list[int]:
    """A short prompt for the check: the chat template's own start tokens when the tokenizer loads, else small ids."""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(hf_dir))
        ids = tok.encode("<|im_start|>user\ndef add(a, b):\n    return a + b<|im_end|>\n", add_special_tokens=False)
        if 0 < len(ids) <= 64:
            return ids
    except Exception as err:
        log(f"check: the tokenizer did not load ({err}); using token ids 1..8")
    return [i % vocab_size for i in range(1, 9)]


def parse_dtypes(text: str) -> list[str]:
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPE_SUFFIX]
    if not dtypes or bad:
        raise SystemExit(f"--dtype takes a comma-separated list of {', '.join(DTYPE_SUFFIX)}; got '{text}'")
    return dtypes


def main() -> None:
    logging.getLogger("onnxruntime.quantization").setLevel(logging.WARNING)
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser(description="Export a Qwen3.5 checkpoint to the ONNX layout frognano's onnx backend loads.")
    ap.add_argument("hf_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", default="fp32", help="comma-separated weight types to keep: fp32, fp16, q4")
    ap.add_argument("--no-check", action="store_true", help="skip comparing onnxruntime with PyTorch")
    ap.add_argument(
        "--external-data",
        action="store_true",
        help="keep the weights in *.onnx.data / *.onnx_data files even under 2 GB (what a 4B export does; for tests)",
    )
    args = ap.parse_args()
    hf_dir, out = Path(args.hf_dir), Path(args.out_dir)
    dtypes = parse_dtypes(args.dtype)
    started = time.time()
    onnx_dir = out / "onnx"
    onnx_dir.mkdir(parents=True, exist_ok=True)

    log(f"[1/5] loading {hf_dir} in fp32 (torch {torch.__version__})")
    hf = load_checkpoint(hf_dir)
    params = sum(p.numel() for p in hf.parameters())
    big = args.external_data or is_big(hf)
    log(f"      {params / 1e6:,.1f} million parameters; fp32 graphs {params * 4 / 1e6:,.1f} MB{' (external data files)' if big else ''}")
    log("[2/5] tracing decoder_model_merged.onnx and embed_tokens.onnx (torch.onnx, dynamo)")
    export_graphs(hf, onnx_dir, big)
    log(f"[3/5] weight types: {', '.join(dtypes)}")
    make_variants(onnx_dir, dtypes, big)
    check = None
    if not args.no_check:
        log("[4/5] checking onnxruntime's fp32 graphs against PyTorch")
        check = check_against_torch(hf, onnx_dir, check_prompt(hf_dir, text_config(hf).vocab_size))
        log(f"      logits max abs diff {check['max_abs_diff']:.3e}, greedy {'same' if check['same'] else 'DIFFERENT'}")
        if not check["same"]:
            raise SystemExit(f"the fp32 export does not match PyTorch: {check}")
    else:
        log("[4/5] check skipped (--no-check)")
    if "fp32" not in dtypes:
        remove_graph(onnx_dir, "decoder_model_merged")
        remove_graph(onnx_dir, "embed_tokens")
    match_data_modes(onnx_dir)
    log("[5/5] copying the configs, tokenizer and chat template")
    template_from = copy_model_files(hf_dir, out)
    report = {
        "exported_by": "scripts/export_onnx.py",
        "source": str(hf_dir.resolve()),
        "dtypes": dtypes,
        "parameters": params,
        "chat_template_from": template_from,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
        "check": check,
        "seconds": round(time.time() - started, 1),
    }
    (out / "export.json").write_text(json.dumps(report, indent=2) + "\n")
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    log(f"wrote {out} ({total / 1e6:.1f} MB) in {report['seconds']} s")


if __name__ == "__main__":
    main()
