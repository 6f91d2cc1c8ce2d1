"""Pages to look at retrieval results: HTML files that open from disk with no
network, and pictures of spatial verification's inliers.

:func:`write_search_page` shows each query with its ranked hits (labelled by
a ground truth when given), :func:`write_evaluation_page` the metrics, a
precision-recall curve, mAP by tag and the queries of lowest AP, and
:func:`write_matches_picture` two images side by side with their inlier
correspondences. Thumbnails are made with Pillow (the ``html`` extra) and
kept in a folder beside each page.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.pages._evaluation_page import write_evaluation_page
    from vlad.pages._matches import MatchesPicture, draw_matches, write_matches_picture
    from vlad.pages._search_page import PageReport, write_search_page
    from vlad.pages._thumbnails import ImageFolders

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
