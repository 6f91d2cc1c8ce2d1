"""What describes the images of a batch: OpenCV's features, learned features
or a callable.

The batch functions take ``descriptor_options`` (OpenCV SIFT, AKAZE or ORB,
:class:`vlad.SiftOptions`, or learned features, ``features="aliked"``,
:class:`vlad.images.LearnedOptions`) or an ``extractor`` (any callable,
:class:`vlad.images._callables.CallableExtractor`); this module turns either
into one object, checks that every image's descriptors have the same width,
and that descriptors are of the kind a codebook was fitted on.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping

from vlad.core._codebook import Codebook
from vlad.core._parameters import Parameter
from vlad.core._validation import check_n_features
from vlad.errors import VladError, VladTypeError
from vlad.formats._hloc import HLOC_EXTRACTOR
from vlad.images._callables import EXTRACTOR_PREFIX, CallableExtractor, load_extractor
from vlad.images._detectors import DETECTORS
from vlad.images._files import ImageReadError
from vlad.images._learned import LEARNED_EXTRACTORS, LearnedOptions
from vlad.images._sift import SiftOptions

__all__ = [
    "Extractor",
    "FEATURES",
    "check_same_kind",
    "checked_widths",
    "descriptor_kind",
    "descriptor_options_for",
    "extractor_for_codebook",
    "resolve_extractor",
]

logger = logging.getLogger(__name__)

#: What describes images: OpenCV's or learned features with their options, or
#: a callable.
Extractor = SiftOptions | LearnedOptions | CallableExtractor
#: The ``features`` of ``descriptor_options``: OpenCV's, or learned ones.
FEATURES = Parameter(
    "features",
    str,
    "sift",
    "Local features: SIFT (128 values), the binary AKAZE (486 bits) or ORB "
    "(256 bits), their bits unpacked to 0/1 values, or the learned ALIKED (128 "
    "values; needs the learned extra).",
    choices=tuple(sorted({*DETECTORS, *LEARNED_EXTRACTORS})),
)
_SIFT_FIELDS = {field.name for field in dataclasses.fields(SiftOptions)}
_LEARNED_FIELDS = {field.name for field in dataclasses.fields(LearnedOptions)}


def resolve_extractor(
    descriptor_options: Mapping | None, extractor: Callable | str | None
) -> Extractor:
    """The options of OpenCV's or learned features, or the callable
    ``extractor`` (a callable, or its ``"package.module:function"`` name,
    imported).

    Learned features (``descriptor_options["features"]`` one of
    :data:`vlad.images._learned.LEARNED_EXTRACTORS`) are
    :class:`vlad.images.LearnedOptions` with their weights found and hashed
    (:meth:`~vlad.images.LearnedOptions.resolved`). With an ``extractor``,
    ``descriptor_options`` may hold ``max_pixels`` only.

    Raises
    ------
    ValueError, TypeError
        Bad options, options of other features than ``features``, OpenCV
        options given with an extractor, or weights that cannot be read.
    ImportError
        An extractor name that cannot be imported, features this OpenCV
        lacks, or learned features without PyTorch and kornia.
    """
    given = dict(descriptor_options or {})
    if extractor is None:
        options = _options(given)
        return options.resolved() if isinstance(options, LearnedOptions) else options
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


def _options(given: dict) -> SiftOptions | LearnedOptions:
    """The options ``given``: of learned features when ``given["features"]``
    names them, else of OpenCV's; options of the other kind refused."""
    learned = FEATURES.check(given.get("features", "sift")) in LEARNED_EXTRACTORS
    kind, fields = (
        (LearnedOptions, _LEARNED_FIELDS) if learned else (SiftOptions, _SIFT_FIELDS)
    )
    others = sorted(set(given) - fields)
    misplaced = [name for name in others if name in _SIFT_FIELDS | _LEARNED_FIELDS]
    if misplaced:
        features = given.get("features", "sift")
        owner = "OpenCV's features" if learned else "learned features (aliked)"
        raise VladError(
            f"descriptor options ({', '.join(misplaced)}) apply to {owner}, not "
            f"to features={features!r}"
        )
    if others:
        raise VladTypeError(
            f"unknown descriptor options: {', '.join(others)}; expected some of "
            f"{', '.join(sorted(_SIFT_FIELDS | _LEARNED_FIELDS))}"
        )
    return kind(**given)


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
) -> SiftOptions | LearnedOptions:
    """The codebook's recorded descriptor options (defaults if it has none,
    with a warning), with ``descriptor_options`` replacing some; features
    of another kind than the codebook's made from ``descriptor_options``
    alone."""
    record = _descriptor_record(codebook)
    recorded = _sift_options_of(record, "the codebook")
    if recorded is None and not record:
        logger.warning(
            "the codebook does not record how its descriptors were made (fitted "
            "on an .npy?): images are described with the default options, %s",
            SiftOptions().kind,
        )
    given = dict(descriptor_options or {})
    recorded = recorded or SiftOptions()
    if "features" in given:
        learned = FEATURES.check(given["features"]) in LEARNED_EXTRACTORS
        if learned != isinstance(recorded, LearnedOptions):
            return _options(given)
        if not learned:
            # RootSIFT's default follows the features asked for, not the
            # codebook's.
            given.setdefault("root_sift", None)
    fields = {field.name for field in dataclasses.fields(recorded)}
    if set(given) - fields:
        # Options of the other kind: refused, in _options's words.
        _options({"features": recorded.features, **given})
    return dataclasses.replace(recorded, **given)


def descriptor_kind(record: Mapping) -> str:
    """What a descriptor record's descriptors are, in words: the options'
    ``kind`` (``"RootSIFT at detected keypoints"``), else the extractor's
    name."""
    options = _sift_options_of(dict(record), "the descriptors")
    return options.kind if options else str(record.get("extractor"))


def _descriptor_record(codebook: Codebook) -> Mapping:
    """The codebook's record of its descriptors ({} when it has none)."""
    record = codebook.metadata.get("descriptor") or {}
    if not isinstance(record, Mapping):
        raise VladError(
            f"the codebook's descriptor record is a {type(record).__name__}, not "
            "a mapping"
        )
    return record


def _sift_options_of(record, whose: str) -> SiftOptions | LearnedOptions | None:
    """The options (of OpenCV's or learned features) of a descriptor record;
    None for an empty record or another extractor's."""
    try:
        return SiftOptions.from_record(record) or LearnedOptions.from_record(record)
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
    if isinstance(options, LearnedOptions) and isinstance(recorded, LearnedOptions):
        _check_same_network(options, recorded)
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


def _check_same_network(options: LearnedOptions, recorded: LearnedOptions) -> None:
    """Raise ``ValueError`` if learned descriptors come from another network
    or other weights than the codebook's (when both record them)."""
    if options.model != recorded.model:
        raise VladError(
            f"the codebook was fitted on descriptors of {recorded.model} but these "
            f"are of {options.model}; make them with model={recorded.model!r} or "
            "fit a new codebook"
        )
    shas = options.weights_sha256, recorded.weights_sha256
    if None not in shas and shas[0] != shas[1]:
        raise VladError(
            f"the codebook was fitted on descriptors of {recorded.model} with "
            f"weights of SHA-256 {shas[1]} but these were made with weights of "
            f"SHA-256 {shas[0]}; make them with the codebook's weights or fit a "
            "new codebook"
        )


def extractor_for_codebook(
    codebook: Codebook,
    descriptor_options: Mapping | None,
    extractor: Callable | str | None,
) -> Extractor:
    """What makes descriptors for ``codebook``: the callable ``extractor`` if
    given, else OpenCV's features as the codebook records them (see
    :func:`descriptor_options_for`; learned features resolve their weights
    here, see :meth:`vlad.images.LearnedOptions.resolved`); ``ValueError`` if
    they are not of the codebook's kind or width."""
    if extractor is None:
        chosen = descriptor_options_for(codebook, descriptor_options)
    else:
        chosen = resolve_extractor(descriptor_options, extractor)
    if isinstance(chosen, LearnedOptions):
        chosen = chosen.resolved()
    logger.debug("descriptors: %s", chosen.record())
    check_same_kind(chosen, codebook)
    check_n_features(chosen.n_features or codebook.n_features, codebook.n_features)
    return chosen
