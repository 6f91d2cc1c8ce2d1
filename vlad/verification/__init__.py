"""Spatial verification: a query's candidates re-ranked by the inliers of a
geometric model between their keypoints, with settings that suit each kind
of descriptors, and query expansion by the images verified.

:func:`inlier_matches` finds the inliers of two images' descriptors,
:func:`spatial_rerank` re-ranks one query's candidates and
:func:`rerank_spatially` every query's results (of a VLAD or an ASMK index),
its settings checked before any work by :func:`check_verification`;
:func:`verification_preset` picks the :class:`VerificationSettings` of
:data:`VERIFICATION_PRESETS` that suit the descriptors' record;
:func:`expand_verified` searches again with each query's verified images.
Verification serves search, the pages and the pipeline alike.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.verification._expansion import expand_verified
    from vlad.verification._presets import (
        VERIFICATION_PRESETS,
        VerificationPreset,
        VerificationSettings,
        verification_preset,
    )
    from vlad.verification._reranking import check_verification, rerank_spatially
    from vlad.verification._spatial import inlier_matches, spatial_rerank

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
