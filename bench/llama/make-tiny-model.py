#!/usr/bin/python3
"""Writes a tiny random-weight llama model (GGUF, f16) for benchmarking llama-server.

The weights are random, so the text is gibberish, but the work per token is that of a real
small llama (768 wide, 12 layers, 12 heads, FFN 2048, 32k vocab: ~135 M parameters, ~250 MB):
on one CPU thread llama-server decodes about 100 tokens/s, and with "ignore_eos": true every
answer has exactly max_tokens tokens. The vocabulary comes from llama.cpp's own
models/ggml-vocab-llama-spm.gguf and the file is written with llama.cpp's own gguf-py, both
from the source tree given on the command line (never copied into this repository).

Usage (Debian's python3 with the python3-numpy and python3-sentencepiece packages):
    /usr/bin/python3 bench/llama/make-tiny-model.py LLAMA_SRC OUT.gguf [--seed N]
"""

import argparse
import pathlib
import sys

WIDTH = 768
LAYERS = 12
HEADS = 12
FFN = 2048
CONTEXT = 4096
# A ChatML template, so /v1/chat/completions needs no --chat-template on the server.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def field_value(field):
    """The value of a GGUFReader field: a scalar, a string, or a list of either."""
    import gguf

    kinds = field.types
    if kinds[0] == gguf.GGUFValueType.ARRAY:
        if kinds[-1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]) for i in field.data]
        return [v for i in field.data for v in field.parts[i].tolist()]
    if kinds[0] == gguf.GGUFValueType.STRING:
        return str(bytes(field.parts[-1]), encoding="utf-8")
    return field.parts[-1][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("llama_src", type=pathlib.Path, help="llama.cpp source tree (for gguf-py and the vocab)")
    parser.add_argument("out", type=pathlib.Path, help="the .gguf file to write")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    sys.path.insert(0, str(args.llama_src / "gguf-py"))
    import numpy as np
    import gguf

    vocab = gguf.GGUFReader(args.llama_src / "models" / "ggml-vocab-llama-spm.gguf")
    tokens = field_value(vocab.fields["tokenizer.ggml.tokens"])
    n_vocab = len(tokens)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("tokenradar-tiny-random-llama")
    w.add_context_length(CONTEXT)
    w.add_embedding_length(WIDTH)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(HEADS)
    w.add_rope_dimension_count(WIDTH // HEADS)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    w.add_tokenizer_model(field_value(vocab.fields["tokenizer.ggml.model"]))
    w.add_tokenizer_pre(field_value(vocab.fields["tokenizer.ggml.pre"]))
    w.add_token_list(tokens)
    w.add_token_scores(field_value(vocab.fields["tokenizer.ggml.scores"]))
    w.add_token_types(field_value(vocab.fields["tokenizer.ggml.token_type"]))
    w.add_bos_token_id(int(field_value(vocab.fields["tokenizer.ggml.bos_token_id"])))
    w.add_eos_token_id(int(field_value(vocab.fields["tokenizer.ggml.eos_token_id"])))
    w.add_unk_token_id(int(field_value(vocab.fields["tokenizer.ggml.unknown_token_id"])))
    w.add_add_bos_token(bool(field_value(vocab.fields["tokenizer.ggml.add_bos_token"])))
    w.add_add_eos_token(bool(field_value(vocab.fields["tokenizer.ggml.add_eos_token"])))
    w.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(args.seed)

    def weight(rows, cols):  # numpy shape (rows, cols) is ggml's (cols, rows)
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(np.float16)

    def norm():
        return np.ones(WIDTH, dtype=np.float32)

    w.add_tensor("token_embd.weight", weight(n_vocab, WIDTH))
    for i in range(LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", norm())
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", weight(WIDTH, WIDTH))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", norm())
        w.add_tensor(f"blk.{i}.ffn_gate.weight", weight(FFN, WIDTH))
        w.add_tensor(f"blk.{i}.ffn_up.weight", weight(FFN, WIDTH))
        w.add_tensor(f"blk.{i}.ffn_down.weight", weight(WIDTH, FFN))
    w.add_tensor("output_norm.weight", norm())
    w.add_tensor("output.weight", weight(n_vocab, WIDTH))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.0f} MB, vocab {n_vocab}", file=sys.stderr)


if __name__ == "__main__":
    main()
