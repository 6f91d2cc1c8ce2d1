"""The four VLAD encoders of the essay vlad comes from, as published.

V. Feinberg, "Scatter Reduction (Numpy Gems, Part 5)", 2021: only reformatted,
with the essay's names. Each takes a fitted scikit-learn k-means and a
``(T, L, F)`` array and returns ``(T, K * F)`` vectors (signed square root,
then L2). :mod:`benchmarks.suites` times them against vlad; they are not part
of the library.

References
----------
.. [1] V. Feinberg. "Scatter Reduction (Numpy Gems, Part 5)". 2021.
   https://vladfeinberg.com/2021/09/15/scatter-reduction.html
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ESSAY_METHODS", "looping", "naivec", "optvec", "truvec"]


def looping(kmeans, local_tlf):
    """The essay's Python loop over images and centres, one ``predict`` per image."""
    k, (t, l, f) = kmeans.n_clusters, local_tlf.shape  # noqa: E741, F841
    centers_kf = kmeans.cluster_centers_
    vlad_tkf = np.zeros((t, k, f))
    for vlad_kf, local_lf in zip(vlad_tkf, local_tlf, strict=True):
        label_l = kmeans.predict(local_lf)
        for i in range(k):
            vlad_kf[i] = np.sum(local_lf[label_l == i] - centers_kf[i], axis=0)
        vlad_D = vlad_kf.ravel()
        vlad_D = np.sign(vlad_D) * np.sqrt(np.abs(vlad_D))
        vlad_D /= np.linalg.norm(vlad_D)
        vlad_kf[:, :] = vlad_D.reshape(k, f)
    return vlad_tkf.reshape(t, -1)


def naivec(kmeans, local_tlf):
    """The essay's dense-mask broadcast: a (T, L, K, F) temporary."""
    k, (t, l, f) = kmeans.n_clusters, local_tlf.shape  # noqa: E741
    centers_kf = kmeans.cluster_centers_
    labels_tl = kmeans.predict(local_tlf.reshape(-1, f)).reshape(t, l)
    mask_tlk = labels_tl[..., np.newaxis] == np.arange(k)
    local_tl1f = local_tlf[..., np.newaxis, :]
    delta_tlkf = local_tl1f - centers_kf  # <-- easy to run out of memory
    vlad_tD = (delta_tlkf * mask_tlk[..., np.newaxis]).sum(axis=1).reshape(t, -1)
    vlad_tD = np.sign(vlad_tD) * np.sqrt(np.abs(vlad_tD))
    vlad_tD /= np.linalg.norm(vlad_tD, axis=1, keepdims=True)
    return vlad_tD


def truvec(kmeans, local_tlf):
    """The essay's ``np.add.at`` scatter."""
    k, (t, l, f) = kmeans.n_clusters, local_tlf.shape  # noqa: E741
    centers_kf = kmeans.cluster_centers_
    labels_tl = kmeans.predict(local_tlf.reshape(-1, f)).reshape(t, l)

    vlad_tkf = np.zeros((t, k, f))
    M = t * k
    labels_tl += np.arange(t)[:, np.newaxis] * k
    vlad_Mf = vlad_tkf.reshape(-1, f)
    np.add.at(vlad_Mf, labels_tl.ravel(), local_tlf.reshape(-1, f))
    counts_M = np.bincount(labels_tl.ravel(), minlength=M)
    vlad_tkf -= counts_M.reshape(t, k, 1) * centers_kf

    vlad_tD = vlad_tkf.reshape(t, -1)
    vlad_tD = np.sign(vlad_tD) * np.sqrt(np.abs(vlad_tD))
    vlad_tD /= np.linalg.norm(vlad_tD, axis=1, keepdims=True)
    return vlad_tD


def optvec(kmeans, local_tlf):
    """The essay's sort + cumulative sum ("ragged array") scatter, its fastest.

    As published it sums in the descriptors' dtype (inaccurate in float32 over
    many rows) and assumes the first and last (image, centre) segments are not
    empty (its ``assert`` fails, or the first segments come out wrong, if they
    are).
    """
    k, (t, l, f) = kmeans.n_clusters, local_tlf.shape  # noqa: E741
    centers_kf = kmeans.cluster_centers_
    label_tl = kmeans.predict(local_tlf.reshape(-1, f)).reshape(t, l)

    vlad_tkf = np.zeros((t, k, f))
    M = t * k
    label_tl += np.arange(t)[:, np.newaxis] * k
    N = t * l
    label_N = label_tl.reshape(N)
    local_fN = local_tlf.reshape(N, f).T
    ix_N = np.argsort(label_N)
    local_fN = local_fN[:, ix_N]
    label_N = label_N[ix_N]

    # ragged array vectorization, see linked post
    label_switch_N = np.diff(label_N, prepend=0)
    pos = np.flatnonzero(label_switch_N)
    pos = np.repeat(pos, label_switch_N[pos])
    pos = np.append(pos, N)
    pos -= 1
    assert len(pos) == M, (len(pos), M)
    pos_M = pos

    np.cumsum(local_fN, axis=1, out=local_fN)
    clustered_fM = np.diff(
        local_fN[:, pos_M], axis=1, prepend=np.zeros_like(local_fN[:, 0:1])
    )
    vlad_tkf = clustered_fM.T.reshape(t, k, f)

    counts_M = np.diff(pos_M, prepend=-1)
    vlad_tkf -= counts_M.reshape(t, k, 1) * centers_kf

    vlad_tD = vlad_tkf.reshape(t, -1)
    vlad_tD = np.sign(vlad_tD) * np.sqrt(np.abs(vlad_tD))
    vlad_tD /= np.linalg.norm(vlad_tD, axis=1, keepdims=True)
    return vlad_tD


#: The essay's methods by its names, in its order.
ESSAY_METHODS: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "looping": looping,
    "naivec": naivec,
    "truvec": truvec,
    "optvec": optvec,
}
