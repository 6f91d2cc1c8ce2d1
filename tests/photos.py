"""The bundled photographs, and image folders made from them, for the tests.

A plain module rather than a conftest.py, so that other test suites' conftest
files stay theirs; each test module wraps these in the fixtures it needs.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

import vlad

DATA = Path(__file__).resolve().parents[1] / "data"
PHOTOS = sorted(path.name for path in DATA.iterdir() if path.suffix in (".jpg", ".png"))
#: Small images keep SIFT fast; the codebook records this, and encoding reuses it.
FAST_OPTIONS = {"max_side": 256}

#: What each bad file of :func:`make_messy_folder` is reported as.
MESSY_SKIPPED = {
    "corrupt.jpg": "truncated JPEG",
    "empty.png": "empty",
    "notes.jpg": "not an image",
}
#: The readable images of :func:`make_messy_folder`, in row order.
MESSY_NAMES = ["blank.png", "chelsea.jpg", "sub/coffee.JPG"]


def fit_fast_codebook(path: Path) -> Path:
    """Fit a 16-centre codebook on the bundled photos at FAST_OPTIONS; save it."""
    codebook, _ = vlad.fit_codebook_to_images(
        DATA, 16, descriptor_options=FAST_OPTIONS, n_jobs=2
    )
    codebook.save(path)
    return path


def make_messy_folder(folder: Path) -> Path:
    """Two photos (one in a subfolder), a truncated JPEG, a zero-byte PNG, a text
    file named .jpg, a textureless PNG and a text file; return the folder."""
    (folder / "sub").mkdir(parents=True)
    encoded = (DATA / "chelsea.jpg").read_bytes()
    (folder / "chelsea.jpg").write_bytes(encoded)
    (folder / "sub" / "coffee.JPG").write_bytes((DATA / "coffee.jpg").read_bytes())
    (folder / "corrupt.jpg").write_bytes(encoded[: len(encoded) // 2])
    (folder / "empty.png").write_bytes(b"")
    (folder / "notes.jpg").write_text("this is not a picture\n")
    cv2.imwrite(str(folder / "blank.png"), np.full((120, 160), 200, np.uint8))
    (folder / "readme.txt").write_text("not an image by name: ignored\n")
    return folder
