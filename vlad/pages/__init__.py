"""Pages to look at retrieval results: HTML files that open from disk with no
network, and pictures of spatial verification's inliers.

:func:`write_search_page` shows each query with its ranked hits (labelled by
a ground truth when given), :func:`write_evaluation_page` the metrics, a
precision-recall curve, mAP by tag and the queries of lowest AP, and
:func:`write_matches_picture` two images side by side with their inlier
correspondences. Thumbnails are made with Pillow (``pip install
'vlad-toolkit[html]'``) and kept in a folder beside each page.
"""

from vlad.pages.evaluation_page import write_evaluation_page
from vlad.pages.matches import MatchesPicture, draw_matches, write_matches_picture
from vlad.pages.search_page import PageReport, write_search_page
from vlad.pages.thumbnails import ImageFolders

__all__ = [
    "ImageFolders",
    "MatchesPicture",
    "PageReport",
    "draw_matches",
    "write_evaluation_page",
    "write_matches_picture",
    "write_search_page",
]
