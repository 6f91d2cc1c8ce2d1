"""Spatial verification's settings for each kind of descriptors.

Lowe's ratio test and the inliers that verify an image suit one kind of
descriptors and not another: the nearest neighbours of learned descriptors
(ALIKED's) seldom pass the ratio SIFT's pass, and the looser ratio they need
lets chance reach more inliers. :data:`VERIFICATION_PRESETS` holds, for each
kind measured, the ratio, the inliers, the keypoints kept and the depth that
suit it, and :func:`verification_preset` reads from descriptors' record which
of them applies.

The kind is read from the descriptors' record (``DescriptorSets.metadata``):

1. a preset named by the caller (``preset=``, ``--verification-preset``);
2. the extractor of vlad's own descriptors (``"opencv-sift"``: ``sift``;
   ``"aliked"``: ``aliked``);
3. for hloc's local features, whose files do not say which network made them
   (their record's extractor is ``"hloc"``), the extractor that the file's name
   gives in hloc's way (``feats-aliked-n16.h5``, ``feats-superpoint-n4096-r1024.h5``:
   one of hloc's extractors among the name's words), if the descriptors have
   that extractor's dimension (ALIKED's 64 or 128, SIFT's 128...);
4. otherwise, and for kinds that nothing was measured on, the defaults (those
   of SIFT), with a note saying why.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from vlad.errors import VladError
from vlad.formats._hloc import HLOC_EXTRACTOR
from vlad.verification._matching import LOWE_RATIO
from vlad.verification._spatial import MAX_KEYPOINTS, MIN_INLIERS

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_PRESET",
    "VERIFICATION_PRESETS",
    "VerificationPreset",
    "VerificationSettings",
    "verification_preset",
]

#: Images per query verified by default. On the retrieval benchmark
#: (docs/retrieval.md) verifying the top 100 of SIFT's gained nothing over the
#: top 20 and took twelve times as long: about 12 ms an image on one core.
DEFAULT_DEPTH = 20


@dataclass(frozen=True)
class VerificationSettings:
    """What spatial verification needs that depends on the descriptors.

    Parameters
    ----------
    ratio : float
        Lowe's ratio of the ``"mutual+ratio"`` and ``"ratio"`` matchings.
    min_inliers : int
        Inliers that verify an image.
    max_keypoints : int or None
        Each image's largest (strongest) keypoints matched; None for all.
    depth : int
        Images of each query's ranking verified.
    """

    ratio: float
    min_inliers: int
    max_keypoints: int | None
    depth: int

    def record(self) -> dict:
        """JSON description."""
        return dataclasses.asdict(self)


#: Verification settings by kind of descriptors. ``sift``: vlad's defaults,
#: measured on RootSIFT (see :data:`vlad.verification._spatial.MIN_INLIERS` and
#: :data:`~vlad.verification._spatial.MAX_KEYPOINTS`). ``aliked``: measured on the
#: real-view benchmark (ALIKED-N16 of ``vlad extract``, at most 4,096
#: keypoints an image, ASMK of 16,384 words; docs/hloc.md). At SIFT's ratio
#: 0.8 verification moved no relevant image above an unrelated one. At 0.9
#: and 12 inliers it verified as many of the relevant pairs of the top 50 as
#: 0.95 and 20 inliers (74% and 75%) but a third as many unrelated ones (102
#: against 279 of 8,906: with 0.95 unrelated pairs reached 61 inliers, with 0.9
#: 30), for less time, at as high a mAP (74.72 against 74.57, and 77.51
#: against 76.69 with query expansion). Matching more than the 1,024
#: strongest keypoints lifted unrelated pairs' inliers and cost two to five
#: times as much. The top 20, 50 and 100 gave mAP 75.22, 74.72 and 75.20
#: (with 0.95 and 20 inliers 73.73, 74.57 and 75.52); on other collections
#: the top 50 beat or tied the top 100 for a third less time: the top 50.
VERIFICATION_PRESETS: dict[str, VerificationSettings] = {
    "sift": VerificationSettings(
        ratio=LOWE_RATIO,
        min_inliers=MIN_INLIERS,
        max_keypoints=MAX_KEYPOINTS,
        depth=DEFAULT_DEPTH,
    ),
    "aliked": VerificationSettings(
        ratio=0.9, min_inliers=12, max_keypoints=MAX_KEYPOINTS, depth=50
    ),
}
#: The preset of descriptors of a kind not in :data:`VERIFICATION_PRESETS`.
DEFAULT_PRESET = "sift"

#: The preset of each extractor of vlad's descriptor records.
_RECORDED_KINDS = {"opencv-sift": "sift", "aliked": "aliked"}

#: hloc's local feature extractors (``hloc/extractors``, by the names its
#: ``extract_features.confs`` give their files), the descriptor dimensions
#: each gives, and the preset that suits it (None: none measured).
_HLOC_EXTRACTORS: dict[str, tuple[tuple[int, ...], str | None]] = {
    "aliked": ((64, 128), "aliked"),  # aliked-t16: 64; -n16, -n16rot, -n32: 128
    "sift": ((128,), "sift"),  # the "dog" extractor's RootSIFT (pycolmap)
    "disk": ((128,), None),
    "superpoint": ((256,), None),
    "sosnet": ((128,), None),
    "r2d2": ((128,), None),
    "d2net": ((512,), None),
}


@dataclass(frozen=True)
class VerificationPreset:
    """Which settings of :data:`VERIFICATION_PRESETS` apply, and why.

    Attributes
    ----------
    name : str
        A key of :data:`VERIFICATION_PRESETS`.
    settings : VerificationSettings
        Its settings.
    reason : str
        Why, in words: what named the preset, or why none was known.
    known : bool
        False when the descriptors' kind has no preset of its own and
        :data:`DEFAULT_PRESET`'s stands in.
    """

    name: str
    settings: VerificationSettings
    reason: str
    known: bool = True

    def record(self) -> dict:
        """JSON description: ``name``, ``reason`` and ``known``."""
        return {"name": self.name, "reason": self.reason, "known": self.known}


def verification_preset(
    record: Mapping | None, preset: str | None = None
) -> VerificationPreset:
    """The verification settings that suit descriptors of ``record``.

    Parameters
    ----------
    record : mapping or None
        The descriptors' record (``DescriptorSets.metadata``); None or an
        empty one when they record nothing.
    preset : str, optional
        A key of :data:`VERIFICATION_PRESETS` that applies whatever the record
        says.

    Returns
    -------
    VerificationPreset
        See the module's description for the rule.

    Raises
    ------
    ValueError
        ``preset`` is not a key of :data:`VERIFICATION_PRESETS`.

    Examples
    --------
    >>> from vlad.verification import verification_preset
    >>> chosen = verification_preset({"extractor": "aliked", "model": "aliked-n16"})
    >>> chosen.name, chosen.settings.ratio, chosen.settings.depth
    ('aliked', 0.9, 50)
    >>> hloc = {"extractor": "hloc", "file": "feats-aliked-n16.h5", "n_features": 128}
    >>> verification_preset(hloc).name
    'aliked'
    >>> unknown = verification_preset({"extractor": "hloc", "file": "features.h5"})
    >>> unknown.name, unknown.known
    ('sift', False)
    """
    if preset is not None:
        if preset not in VERIFICATION_PRESETS:
            raise VladError(
                f"Unknown verification preset {preset!r}; expected one of "
                f"{sorted(VERIFICATION_PRESETS)}"
            )
        return _preset(preset, f"the verification preset {preset!r} was given")
    record = record if isinstance(record, Mapping) else {}
    extractor = record.get("extractor")
    if extractor is None:
        return _default("the descriptors do not record their extractor")
    if extractor == HLOC_EXTRACTOR:
        return _hloc_preset(record)
    if extractor in _RECORDED_KINDS:
        return _preset(
            _RECORDED_KINDS[extractor],
            f"the descriptors' record names extractor {extractor!r}",
        )
    return _default(
        f"no verification settings were measured on {extractor!r} descriptors"
    )


def _hloc_preset(record: Mapping) -> VerificationPreset:
    """The preset of hloc's local features, from the file's name (see the
    module's description)."""
    file = str(record.get("file") or "")
    words = set(re.split(r"[^a-z0-9]+", PurePath(file).stem.lower()))
    named = sorted(words & set(_HLOC_EXTRACTORS))
    if len(named) != 1:
        return _default(
            f"hloc's features file {file!r} "
            + (
                f"names several extractors ({', '.join(named)})"
                if named
                else "does not name its extractor as hloc names its files "
                "(feats-aliked-n16.h5)"
            )
        )
    extractor = named[0]
    widths, preset = _HLOC_EXTRACTORS[extractor]
    n_features = record.get("n_features")
    if n_features not in widths:
        return _default(
            f"hloc's features file {file!r} names {extractor!r}, whose descriptors "
            f"have {' or '.join(map(str, widths))} dimensions, but these have "
            f"{n_features}"
        )
    if preset is None:
        return _default(
            f"no verification settings were measured on hloc's {extractor!r} "
            f"descriptors (file {file!r})"
        )
    return _preset(
        preset, f"hloc's features file {file!r} names extractor {extractor!r}"
    )


def _preset(name: str, reason: str) -> VerificationPreset:
    return VerificationPreset(name, VERIFICATION_PRESETS[name], reason)


def _default(reason: str) -> VerificationPreset:
    return VerificationPreset(
        DEFAULT_PRESET, VERIFICATION_PRESETS[DEFAULT_PRESET], reason, known=False
    )
