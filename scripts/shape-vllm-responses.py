"""
Writes test/fixtures/model-servers/vllm/*.http: HTTP responses shaped exactly as vLLM's OpenAI server sends them
when started with `--enable-auto-tool-choice --tool-call-parser qwen3_coder --reasoning-parser qwen3
--enable-prompt-tokens-details`, for the cases the client must survive. No GPU here, so they are built from vLLM's
source rather than captured: serving_chat.py (finish_reason "tool_calls" whenever the parser found a call, even a
cut-off one), protocol.py (pydantic `model_dump_json(exclude_unset=True)`: compact JSON), qwen3coder_tool_parser.py
(non-streamed ids `chatcmpl-tool-<32 hex>`, streamed ids `call_<24 hex>`, arguments via json.dumps with ", " and
": " separators; streamed as header, "{", one fragment per complete parameter, "}"), the qwen3 reasoning parser
(`reasoning_content` before 0.11, `reasoning` after; content after </think> keeps its "\n\n") and the error
wordings of each version. Deterministic: rerun to regenerate byte for byte.

Usage: python3 scripts/shape-vllm-responses.py OUT_DIR
"""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
CREATED = 1764745200
MODEL = "frognano-4b"


def dump(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def args(d) -> str:
    return json.dumps(d, ensure_ascii=False)  # the parser's own json.dumps: ", " and ": "


def http(name: str, status: str, content_type: str, body: str, extra: str = "") -> None:
    head = f"HTTP/1.1 {status}\r\ndate: Wed, 03 Dec 2025 07:00:00 GMT\r\nserver: uvicorn\r\n"
    if content_type.startswith("text/event-stream"):
        head += f"content-type: {content_type}\r\ntransfer-encoding: chunked\r\n"
    else:
        head += f"content-length: {len(body.encode())}\r\ncontent-type: {content_type}\r\n"
    (out / f"{name}.http").write_bytes((head + extra + "\r\n" + body).encode())


def completion(cid, message, finish, usage, reasoning_field="reasoning_content"):
    msg = {"role": "assistant", "content": message.get("content"), "refusal": None, "annotations": None, "audio": None,
           "function_call": None, "tool_calls": message.get("tool_calls", [])}
    msg[reasoning_field] = message.get("reasoning")
    return dump({
        "id": cid, "object": "chat.completion", "created": CREATED, "model": MODEL,
        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish, "stop_reason": None}],
        "service_tier": None, "system_fingerprint": None, "usage": usage,
        "prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None,
    })


def usage(prompt, completion_tokens, cached):
    return {"prompt_tokens": prompt, "total_tokens": prompt + completion_tokens, "completion_tokens": completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached}}


# 1. Parallel tool calls after reasoning (vLLM 0.10: reasoning_content).
bash_args = args({"command": "python -m pytest tests/test_io.py -x -q", "description": "Run the failing test"})
read_args = args({"file_path": "/repo/src/io.py", "offset": 40, "limit": 30})
http("tool-calls", "200 OK", "application/json", completion(
    "chatcmpl-5b0e6c7d2f0a4c1e9a7b3d2e1f0c9b8a",
    {"content": "\n\n", "reasoning": "The test reads a CRLF file; check how read() opens it.\n",
     "tool_calls": [
         {"id": "chatcmpl-tool-0d6f3a1b2c4e4f5a8b9c0d1e2f3a4b5c", "type": "function", "function": {"name": "Bash", "arguments": bash_args}},
         {"id": "chatcmpl-tool-7e8f9a0b1c2d4e3f8a9b0c1d2e3f4a5b", "type": "function", "function": {"name": "Read", "arguments": read_args}},
     ]},
    "tool_calls", usage(5123, 188, 4992)))

# 2. The same on vLLM >= 0.11, which names the field `reasoning`.
http("tool-calls-reasoning-field", "200 OK", "application/json", completion(
    "chatcmpl-9c1d2e3f4a5b4c6d8e7f0a1b2c3d4e5f",
    {"content": "\n\n", "reasoning": "Run the tests first.\n",
     "tool_calls": [{"id": "chatcmpl-tool-1a2b3c4d5e6f4a7b8c9d0e1f2a3b4c5d", "type": "function", "function": {"name": "Bash", "arguments": args({"command": "ls"})}}]},
    "tool_calls", usage(812, 40, 0), reasoning_field="reasoning"))

# 3. A Write cut off at max_tokens=64: the parser's regex accepts the unclosed call, serving_chat says "tool_calls".
http("truncated-tool-call", "200 OK", "application/json", completion(
    "chatcmpl-2f3e4d5c6b7a4a8b9c0d1e2f3a4b5c6d",
    {"content": "\n\n", "reasoning": "Rewrite the reader.\n",
     "tool_calls": [{"id": "chatcmpl-tool-3b4c5d6e7f8a4b9c0d1e2f3a4b5c6d7e", "type": "function", "function": {"name": "Write", "arguments": args({"file_path": "/repo/src/io.py", "content": "def read(path):\n    with open(pa"})}}]},
    "tool_calls", usage(2048, 64, 1920)))

# 4. A final answer, no tool call.
http("final-answer", "200 OK", "application/json", completion(
    "chatcmpl-4d5e6f7a8b9c4d0e1f2a3b4c5d6e7f8a",
    {"content": "\n\nThe CRLF handling is fixed and the tests pass.", "reasoning": "All green.\n"},
    "stop", usage(9001, 21, 8960)))


def sse(name: str, events: list) -> None:
    body = "".join(f"data: {e if isinstance(e, str) else dump(e)}\n\n" for e in events)
    http(name, "200 OK", "text/event-stream; charset=utf-8", body)


def chunk(cid, delta, finish=None):
    return {"id": cid, "object": "chat.completion.chunk", "created": CREATED, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def usage_chunk(cid, u):
    return {"id": cid, "object": "chat.completion.chunk", "created": CREATED, "model": MODEL, "choices": [], "usage": u}


# 4b. tool_choice "required": guided decoding to a JSON list of calls; the call is parsed from that, not by the
#     tool parser, and finish_reason stays the engine's ("stop").
http("required-tool-call", "200 OK", "application/json", completion(
    "chatcmpl-0f1e2d3c4b5a4a69887766554433221a",
    {"content": "", "reasoning": None,
     "tool_calls": [{"id": "chatcmpl-tool-5a4b3c2d1e0f4a9b8c7d6e5f4a3b2c1d", "type": "function", "function": {"name": "report_status", "arguments": args({"ready": True})}}]},
    "stop", usage(212, 9, 0)))

# 5. Streamed: reasoning deltas, content, two calls as the qwen3_coder streaming parser emits them, usage last.
cid = "chatcmpl-6e7f8a9b0c1d4e2f3a4b5c6d7e8f9a0b"
events = [chunk(cid, {"role": "assistant", "content": ""})]
events += [chunk(cid, {"reasoning_content": t}) for t in ["The", " test", " reads", " a", " CRLF", " file", ".\n"]]
events += [chunk(cid, {"content": "\n\n"})]
events += [
    chunk(cid, {"tool_calls": [{"id": "call_5f6a7b8c9d0e1f2a3b4c5d6e", "type": "function", "index": 0, "function": {"name": "Bash", "arguments": ""}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": '"command": "python -m pytest tests/test_io.py -x -q"'}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": ', "description": "Run the failing test"'}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
    chunk(cid, {"tool_calls": [{"id": "call_0a1b2c3d4e5f6a7b8c9d0e1f", "type": "function", "index": 1, "function": {"name": "Read", "arguments": ""}}]}),
    chunk(cid, {"tool_calls": [{"index": 1, "function": {"arguments": "{"}}]}),
    chunk(cid, {"tool_calls": [{"index": 1, "function": {"arguments": '"file_path": "/repo/src/io.py"'}}]}),
    chunk(cid, {"tool_calls": [{"index": 1, "function": {"arguments": ', "offset": 40'}}]}),
    chunk(cid, {"tool_calls": [{"index": 1, "function": {"arguments": ', "limit": 30'}}]}),
    chunk(cid, {"tool_calls": [{"index": 1, "function": {"arguments": "}"}}]}),
    chunk(cid, {"content": ""}, "tool_calls"),
    usage_chunk(cid, usage(5123, 188, 4992)),
    "[DONE]",
]
sse("stream-tool-calls", events)

# 6. Streamed Write cut off at max_tokens=64: the content parameter never closed, so only the header, "{" and the
#    first parameter were streamed; finish_reason is still "tool_calls".
cid = "chatcmpl-8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d"
sse("stream-truncated-tool-call", [
    chunk(cid, {"role": "assistant", "content": ""}),
    chunk(cid, {"reasoning": "Rewrite the reader.\n"}),
    chunk(cid, {"content": "\n\n"}),
    chunk(cid, {"tool_calls": [{"id": "call_9d0e1f2a3b4c5d6e7f8a9b0c", "type": "function", "index": 0, "function": {"name": "Write", "arguments": ""}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": "{"}}]}),
    chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": '"file_path": "/repo/src/io.py"'}}]}),
    chunk(cid, {"content": ""}, "tool_calls"),
    usage_chunk(cid, usage(2048, 64, 1920)),
    "[DONE]",
])

# 7. Without a tool parser: the raw qwen3_coder markup arrives as content (vLLM with tool_choice "none").
cid = "chatcmpl-1b2c3d4e5f6a4b7c8d9e0f1a2b3c4d5e"
raw = "<tool_call>\n<function=Bash>\n<parameter=command>\nls -la\n</parameter>\n</function>\n</tool_call>"
sse("stream-raw-markup", [chunk(cid, {"role": "assistant", "content": ""}), chunk(cid, {"reasoning_content": "List files.\n"}), chunk(cid, {"content": "\n\n"})]
    + [chunk(cid, {"content": raw[i:i + 9]}) for i in range(0, len(raw), 9)]
    + [chunk(cid, {"content": ""}, "stop"), usage_chunk(cid, usage(700, 30, 0)), "[DONE]"])

# 8. An engine error mid-stream (serving_chat's except branch: an error event, then [DONE]).
cid = "chatcmpl-3c4d5e6f7a8b4c9d0e1f2a3b4c5d6e7f"
sse("stream-error", [chunk(cid, {"role": "assistant", "content": ""}), chunk(cid, {"reasoning_content": "Hmm"}),
                     {"error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.", "type": "InternalServerError", "param": None, "code": 500}},
                     "[DONE]"])


def error(name, status, message, typ, legacy=False):
    code = int(status.split()[0])
    body = {"object": "error", "message": message, "type": typ, "param": None, "code": code} if legacy else \
        {"error": {"message": message, "type": typ, "param": None, "code": code}}
    http(name, status, "application/json", dump(body))


# 9. Context overflows in each version's words.
error("overflow-max-model-len", "400 Bad Request", "max_tokens=8192 cannot be greater than max_model_len=4096. Please request fewer output tokens.", "BadRequestError")
error("overflow-too-large", "400 Bad Request", "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 8192 tokens and your request has 2100 input tokens (8192 > 8192 - 2100).", "BadRequestError")
error("overflow-legacy", "400 Bad Request", "This model's maximum context length is 4096 tokens. However, you requested 8292 tokens (100 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.", "BadRequestError", legacy=True)
error("overflow-decoder-prompt", "400 Bad Request", "The decoder prompt (length 70001) is longer than the maximum model length of 65536. Make sure that `max_model_len` is no smaller than the number of text tokens.", "BadRequestError")
# 10. No --enable-auto-tool-choice.
error("auto-tool-choice-rejected", "400 Bad Request", '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', "BadRequestError")
# 11. A validation error surfaced as a 500 (same request, same answer).
error("validation-500", "500 Internal Server Error", "1 validation error for ValidatorIterator\n0.function.arguments\n  Input should be a valid string", "InternalServerError")
# 12. Restarting: the engine is not up yet (vLLM's /health and requests during load), then the router's 503.
error("engine-dead-500", "500 Internal Server Error", "EngineCore encountered an issue. See stack trace (above) for the root cause.", "InternalServerError")
http("unavailable-503", "503 Service Unavailable", "application/json", dump({"error": {"message": "Service Unavailable", "type": "ServiceUnavailableError", "param": None, "code": 503}}), "retry-after: 1\r\n")

# 13. /v1/models with max_model_len, and /tokenize.
http("models", "200 OK", "application/json", dump({"object": "list", "data": [{"id": MODEL, "object": "model", "created": CREATED, "owned_by": "vllm", "root": "/models/frognano-4b", "parent": None, "max_model_len": 8192, "permission": [{"id": "modelperm-0a1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d", "object": "model_permission", "created": CREATED, "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True, "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False}]}]}))
http("tokenize", "200 OK", "application/json", dump({"count": 2100, "max_model_len": 8192, "tokens": [], "token_strs": None}))
print(f"wrote {len(list(out.glob('*.http')))} fixtures to {out}")
