"""What describes the images of a batch: OpenCV's features or a callable.

The batch functions take ``descriptor_options`` (OpenCV SIFT, AKAZE or ORB,
:class:`vlad.SiftOptions`) or an ``extractor`` (any callable,
:class:`vlad.images._callables.CallableExtractor`); this module turns either
into one object, checks that every image's descriptors have the same width,
and that descriptors are of the kind a codebook was fitted on.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping

from vlad.core._codebook import Codebook
from vlad.core._validation import check_n_features
from vlad.errors import VladError
from vlad.formats._hloc import HLOC_EXTRACTOR
from vlad.images._callables import EXTRACTOR_PREFIX, CallableExtractor, load_extractor
from vlad.images._files import ImageReadError
from vlad.images._sift import SiftOptions

__all__ = [
    "Extractor",
    "check_same_kind",
    "checked_widths",
    "descriptor_options_for",
    "extractor_for_codebook",
    "resolve_extractor",
]

logger = logging.getLogger(__name__)

#: What describes images: OpenCV's features with their options, or a callable.
Extractor = SiftOptions | CallableExtractor


def resolve_extractor(
    descriptor_options: Mapping | None, extractor: Callable | str | None
) -> Extractor:
    """The options of OpenCV's features, or the callable ``extractor`` (a
    callable, or its ``"package.module:function"`` name, imported).

    With an ``extractor``, ``descriptor_options`` may hold ``max_pixels``
    only.

    Raises
    ------
    ValueError, TypeError
        Bad options, or OpenCV options given with an extractor.
    ImportError
        An extractor name that cannot be imported, or features this OpenCV
        lacks.
    """
    given = dict(descriptor_options or {})
    if extractor is None:
        return SiftOptions(**given)
    if isinstance(extractor, CallableExtractor):
        extractor = extractor.function
    if isinstance(extractor, str):
        extractor = load_extractor(extractor)
    others = sorted(set(given) - {"max_pixels"})
    if others:
        raise VladError(
            f"descriptor options ({', '.join(others)}) apply to OpenCV's features, "
            "not to a callable extractor; give one or the other"
        )
    return CallableExtractor(extractor, **given)


def checked_widths(
    results: Iterable[tuple], n_features: int | None, kind: str, whose: str
) -> Iterator[tuple]:
    """``(image, features)`` pairs of ``results``, raising ``ValueError`` at the
    first image whose descriptors are not ``n_features`` wide (when None: as
    wide as the first image's)."""
    for image, features in results:
        if not isinstance(features, ImageReadError):
            width = features[1].shape[1]
            if n_features is None:
                n_features, whose = width, f"those of {image.name}"
            elif width != n_features:
                raise VladError(
                    f"{kind} of {image.name} have {width} values each, but "
                    f"{whose} have {n_features}; every image's descriptors must "
                    "have the same width"
                )
        yield image, features


def descriptor_options_for(
    codebook: Codebook, descriptor_options: Mapping | None
) -> SiftOptions:
    """The codebook's recorded descriptor options (defaults if it has none,
    with a warning), with ``descriptor_options`` replacing some."""
    record = _descriptor_record(codebook)
    recorded = _sift_options_of(record, "the codebook")
    if recorded is None and not record:
        logger.warning(
            "the codebook does not record how its descriptors were made (fitted "
            "on an .npy?): images are described with the default options, %s",
            SiftOptions().kind,
        )
    given = dict(descriptor_options or {})
    if "features" in given:
        # RootSIFT's default follows the features asked for, not the codebook's.
        given.setdefault("root_sift", None)
    return dataclasses.replace(recorded or SiftOptions(), **given)


def _descriptor_record(codebook: Codebook) -> Mapping:
    """The codebook's record of its descriptors ({} when it has none)."""
    record = codebook.metadata.get("descriptor") or {}
    if not isinstance(record, Mapping):
        raise VladError(
            f"the codebook's descriptor record is a {type(record).__name__}, not "
            "a mapping"
        )
    return record


def _sift_options_of(record, whose: str) -> SiftOptions | None:
    """The SIFT options of a descriptor record; None for an empty record or
    another extractor's."""
    try:
        return SiftOptions.from_record(record)
    except ValueError as error:
        raise VladError(f"{whose} holds {error}") from None


def check_same_kind(descriptors: Extractor | Mapping | None, codebook: Codebook):
    """Raise ``ValueError`` if descriptors (their options or their record)
    differ in kind from the codebook's, when both are known: another
    extractor, or SIFT made another way."""
    codebook_record = _descriptor_record(codebook)
    if not isinstance(descriptors, Mapping | None):
        descriptors = descriptors.record()
    descriptors = descriptors or {}
    extractors = codebook_record.get("extractor"), descriptors.get("extractor")
    if None not in extractors and extractors[0] != extractors[1]:
        callable_hint = (
            " (pass extractor=, or --extractor, naming it)"
            if str(extractors[0]).startswith(EXTRACTOR_PREFIX)
            else " (give hloc's local features, an .h5)"
            if extractors[0] == HLOC_EXTRACTOR
            else ""
        )
        raise VladError(
            f"the codebook was fitted on {extractors[0]!r} descriptors but these "
            f"are {extractors[1]!r} descriptors; make them with the codebook's "
            f"extractor{callable_hint} or fit a codebook on descriptors of this "
            "kind"
        )
    options = _sift_options_of(descriptors, "the descriptors")
    recorded = _sift_options_of(codebook_record, "the codebook")
    if options is None or recorded is None:
        return
    # Affine views shift every image's residuals: vectors of descriptors made
    # with and without them (or with other tilts) do not compare.
    kinds = [
        (made.root_sift, made.dense, made.affine_tilts) for made in (options, recorded)
    ]
    if kinds[0] != kinds[1]:
        tilts = ""
        if options.affine_tilts or recorded.affine_tilts:
            tilts = f", affine_tilts={recorded.affine_tilts}"
        raise VladError(
            f"the codebook was fitted on {recorded.kind} but these descriptors are "
            f"{options.kind}; make them as the codebook's were "
            f"(root_sift={recorded.root_sift}, dense={recorded.dense}{tilts}) or fit "
            "a new codebook"
        )


def extractor_for_codebook(
    codebook: Codebook,
    descriptor_options: Mapping | None,
    extractor: Callable | str | None,
) -> Extractor:
    """What makes descriptors for ``codebook``: the callable ``extractor`` if
    given, else OpenCV's features as the codebook records them (see
    :func:`descriptor_options_for`); ``ValueError`` if they are not of the
    codebook's kind or width."""
    if extractor is None:
        chosen = descriptor_options_for(codebook, descriptor_options)
    else:
        chosen = resolve_extractor(descriptor_options, extractor)
    logger.debug("descriptors: %s", chosen.record())
    check_same_kind(chosen, codebook)
    check_n_features(chosen.n_features or codebook.n_features, codebook.n_features)
    return chosen
