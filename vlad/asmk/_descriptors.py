"""Whether the descriptors given to an ASMK index are of the kind it holds,
by their records: the extractor, the network and weights of learned
features, RootSIFT or plain, dense or detected SIFT."""

from __future__ import annotations

from collections.abc import Mapping

from vlad.errors import VladError
from vlad.images._learned import LearnedOptions
from vlad.images._sift import SiftOptions

__all__ = ["check_same_descriptors"]


def check_same_descriptors(expected: Mapping | None, given: Mapping | None, what: str):
    """Raise ``ValueError`` if two descriptor records differ in kind (another
    extractor, SIFT made another way: RootSIFT or plain, dense or detected,
    or learned features of another network or other weights), when both
    say."""
    expected, given = expected or {}, given or {}
    extractors = expected.get("extractor"), given.get("extractor")
    if None not in extractors and extractors[0] != extractors[1]:
        raise VladError(
            f"the index holds {extractors[0]!r} descriptors but {what} are "
            f"{extractors[1]!r} descriptors; describe them as the index's were"
        )
    ours, theirs = (
        LearnedOptions.from_record(dict(expected)),
        LearnedOptions.from_record(dict(given)),
    )
    if ours is not None and theirs is not None:
        shas = ours.weights_sha256, theirs.weights_sha256
        if ours.model != theirs.model or (None not in shas and shas[0] != shas[1]):
            raise VladError(
                f"the index holds descriptors of {ours.model} with weights of "
                f"SHA-256 {shas[0]} but {what} are of {theirs.model} with weights "
                f"of SHA-256 {shas[1]}; describe them as the index's were"
            )
    ours, theirs = SiftOptions.from_record(expected), SiftOptions.from_record(given)
    if ours is not None and theirs is not None and ours.kind != theirs.kind:
        raise VladError(
            f"the index holds {ours.kind} but {what} are {theirs.kind}; describe "
            f"them as the index's were (root_sift={ours.root_sift}, "
            f"dense={ours.dense})"
        )
