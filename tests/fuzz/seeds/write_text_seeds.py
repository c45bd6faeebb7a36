#!/usr/bin/env python3
"""Writes the text seeds of tests/fuzz/corpus (the binary ones come from
write_seeds.cpp): tokenizer inputs from the llama.cpp test vectors in tests/data/tokenizer,
detokenizer id sequences from their expected ids, the chat templates and grammars of
tests/data, request bodies and JSON schemas. Usage: write_text_seeds.py REPO_ROOT"""
import json
import os
import sys

root = sys.argv[1]
data = os.path.join(root, "tests", "data")
corpus = os.path.join(root, "tests", "fuzz", "corpus")


def write(target, name, payload):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    if isinstance(payload, str):
        payload = payload.encode()
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(payload)


def vectors(vocab):
    base = os.path.join(data, "tokenizer", vocab)
    with open(base + ".inp", encoding="utf-8") as f:
        inputs = f.read().split("\n__ggml_vocab_test__\n")
    with open(base + ".out", encoding="utf-8") as f:
        outputs = [line.split() for line in f.read().splitlines()]
    return [i for i in inputs if i != ""], outputs


# Tokenizers: byte 0 = vocabulary index (low bits) + add_special (0x40) + parse_special (0x80).
texts, _ = vectors("ggml-vocab-gpt-2.gguf")
specials = ["<|endoftext|>hi", "<s> [INST] x [/INST]</s>", "[CLS] a [SEP]", "<|im_start|>user\nhi<|im_end|>"]
for target, n_vocabs in (("tokenizer_spm", 2), ("tokenizer_bpe", 3), ("tokenizer_wpm", 1)):
    for i, text in enumerate(texts[:40]):
        write(target, "seed-%02d" % i, bytes([i % n_vocabs]) + text.encode())
    for i, text in enumerate(specials):
        write(target, "seed-special-%d" % i, bytes([0xC0 | (i % n_vocabs)]) + text.encode())

# Detokenizer: byte 0 = vocabulary (0 llama-spm, 1 gpt-2, 2 bert-bge) + special (0x80),
# then 3 little-endian bytes per id.
for index, vocab in enumerate(("ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf")):
    _, outputs = vectors(vocab)
    for i, ids in enumerate(outputs[:12]):
        if not ids:
            continue
        payload = bytes([index | (0x80 if i % 2 else 0)])
        for t in ids:
            payload += int(t).to_bytes(3, "little")
        write("detokenizer", "seed-%d-%02d" % (index, i), payload)

# Jinja: every template, and one with its messages.
templates = sorted(f for f in os.listdir(os.path.join(data, "templates")) if f.endswith(".jinja"))
for name in templates:
    with open(os.path.join(data, "templates", name), encoding="utf-8") as f:
        source = f.read()
    write("jinja", "seed-" + name, source)
messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "", "tool_call": "{\"city\": \"Oslo\"}"},
            {"role": "user", "content": "and {{ x }}?"}]
write("jinja", "seed-inline-with-messages",
      "{%- for m in messages -%}{{ m.role | upper }}: {{ m.content | trim }}{% if not loop.last %}\n{% endif %}"
      "{%- endfor -%}{% if add_generation_prompt %}\nASSISTANT:{% endif %}"
      "\n==runnel-messages==\n" + json.dumps(messages))

# Chat bodies (chat_messages: byte 0 picks the template; server_api: byte 0 picks the endpoint).
tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                          "parameters": {"type": "object",
                                                         "properties": {"city": {"type": "string"}},
                                                         "required": ["city"]}}}
chats = [
    {"messages": [{"role": "user", "content": "Hello"}]},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Weather?"}],
     "tools": [tool], "tool_choice": "auto"},
    {"messages": [{"role": "user", "content": "Weather in Oslo?"},
                  {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
     "tools": [tool]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "two"}]}],
     "chat_template_kwargs": {"enable_thinking": False}},
]
for i, body in enumerate(chats):
    for t in range(0, len(templates), 3):
        write("chat_messages", "seed-%d-%d" % (i, t), bytes([(t + i) % len(templates)]) + json.dumps(body).encode())
    write("server_api", "seed-chat-%d" % i, b"\x00" + json.dumps(body).encode())
requests = {
    "seed-chat-sampling": (0, {"messages": [{"role": "user", "content": "Hi"}], "temperature": 0.7, "top_p": 0.9,
                               "top_k": 40, "min_p": 0.05, "seed": 3, "max_tokens": 16, "stop": ["\n", "END"],
                               "presence_penalty": 0.5, "frequency_penalty": 0.2, "logit_bias": {"5": -100},
                               "logprobs": True, "top_logprobs": 2, "n": 2, "stream": True,
                               "stream_options": {"include_usage": True}}),
    "seed-chat-json-schema": (0, {"messages": [{"role": "user", "content": "JSON"}],
                                  "response_format": {"type": "json_schema", "json_schema": {
                                      "name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}),
    "seed-chat-json-object": (0, {"messages": [{"role": "user", "content": "JSON"}],
                                  "response_format": {"type": "json_object"}}),
    "seed-chat-tool-required": (0, {"messages": [{"role": "user", "content": "call"}], "tools": [tool],
                                    "tool_choice": "required", "parallel_tool_calls": False}),
    "seed-chat-tool-named": (0, {"messages": [{"role": "user", "content": "call"}], "tools": [tool],
                                 "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    "seed-completion": (1, {"prompt": "Once upon a time", "max_tokens": 8, "echo": True, "logprobs": 2}),
    "seed-completion-grammar": (1, {"prompt": "Answer:", "grammar": "root ::= \"yes\" | \"no\"", "temperature": 0}),
    "seed-completion-schema": (1, {"prompt": "x", "json_schema": {"type": "array", "items": {"type": "string"}}}),
    "seed-embeddings": (2, {"input": ["hello", "world"], "model": "m"}),
    "seed-embeddings-base64": (2, {"input": "hello", "encoding_format": "base64"}),
}
for name, (endpoint, body) in requests.items():
    write("server_api", name, bytes([endpoint]) + json.dumps(body).encode())

for name in sorted(os.listdir(os.path.join(data, "grammars"))):
    if name.endswith(".gbnf"):
        with open(os.path.join(data, "grammars", name), encoding="utf-8") as f:
            write("grammar", "seed-" + name, f.read())
write("grammar", "seed-tokens.gbnf", "root ::= <[3]> [a-z]{2,5} !<[4]> \"x\"?\n")

schemas = {
    "object": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 8},
                                                 "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                                 "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
               "required": ["name"], "additionalProperties": False},
    "enum-const": {"anyOf": [{"enum": ["a", "b", 1, None]}, {"const": {"k": [1, 2]}}]},
    "numbers": {"type": "object", "properties": {"x": {"type": "number", "exclusiveMinimum": -1.5, "maximum": 10},
                                                  "n": {"type": "integer", "minimum": -20, "maximum": 300}}},
    "refs": {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                                   "next": {"$ref": "#/$defs/node"}}}},
             "$ref": "#/$defs/node"},
    "strings": {"type": "array", "prefixItems": [{"type": "string", "format": "date"},
                                                  {"type": "string", "pattern": "^[a-z]+[0-9]?$"}],
                "minItems": 1},
    "oneof": {"oneOf": [{"type": "boolean"}, {"type": ["null", "string"]}], "description": "d"},
}
for name, schema in schemas.items():
    write("json_schema", "seed-" + name + ".json", json.dumps(schema))
