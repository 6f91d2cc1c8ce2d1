"""Pictures of inlier matches: vlad.pages._matches, and the search page's links
to them after spatial re-ranking."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hostile.makers import png_of_size
from html_pages import parse_page, source_file
from photos import DATA, FAST_OPTIONS

import vlad
from vlad.images._files import ImageReadError, read_image
from vlad.images._sift import SiftOptions, extract_keypoints_with_options
from vlad.pages import draw_matches, write_matches_picture, write_search_page
from vlad.pages._matches import GAP
from vlad.search import build_index
from vlad.verification._reranking import rerank_spatially
from vlad.verification._spatial import MIN_INLIERS, count_inliers

pytest.importorskip("PIL", reason="the pages need Pillow (vlad-toolkit[html])")


def test_the_two_images_stand_side_by_side_at_one_height():
    left = np.zeros((50, 100, 3), np.uint8)
    right = np.zeros((100, 200), np.uint8)
    starts = np.array([[10.0, 10.0], [90.0, 40.0]])
    ends = np.array([[150.0, 80.0], [20.0, 5.0]])
    picture = draw_matches(left, right, starts, ends)
    # The left image is scaled by 2 to the right one's height of 100.
    assert picture.shape == (100, 200 + GAP + 200, 3)
    empty = draw_matches(left, right, np.zeros((0, 2)), np.zeros((0, 2)))
    assert (empty[:, 200 : 200 + GAP] == 255).all()
    assert (np.delete(empty, np.s_[200 : 200 + GAP], axis=1) == 0).all()
    for start, end in zip(starts, ends, strict=True):
        # Where each line starts, ends and crosses half way, it is drawn in
        # colour over the black images.
        first = (start + 0.5) * 2 - 0.5
        last = end + [200 + GAP, 0]
        for x, y in (first, last, (first + last) / 2):
            if 200 <= x < 200 + GAP:
                continue
            assert picture[round(y), round(x)].max() > 100, (x, y)
    smaller = draw_matches(left, right, starts, ends, max_height=25)
    assert smaller.shape == (25, 50 + GAP + 50, 3)


def test_points_of_another_shape_are_refused():
    image = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2\)"):
        draw_matches(image, image, np.zeros((3, 2)), np.zeros((2, 2)))


def warped_copy(name: str, path):
    image = cv2.imread(str(DATA / name))
    height, width = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), 15, 0.75)
    cv2.imwrite(str(path), cv2.warpAffine(image, matrix, (width, height)))
    return path


def test_the_picture_draws_as_many_lines_as_count_inliers_counts(tmp_path):
    query = warped_copy("astronaut.jpg", tmp_path / "query.jpg")
    output = tmp_path / "matches.png"
    found = write_matches_picture(
        query, DATA / "astronaut.jpg", output, descriptor_options=FAST_OPTIONS
    )
    options = SiftOptions(**FAST_OPTIONS)
    expected = count_inliers(
        *extract_keypoints_with_options(read_image(query), options),
        *extract_keypoints_with_options(read_image(DATA / "astronaut.jpg"), options),
    )
    assert found.n_inliers == expected > 30 and found.n_matches >= expected
    written = cv2.imread(str(output))
    assert written.shape == found.picture.shape
    assert (written == found.picture).all()


def test_a_picture_of_another_suffix_or_an_unreadable_image_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"output must end in \.png, \.jpg, \.jpeg"):
        write_matches_picture(
            DATA / "chelsea.jpg", DATA / "coffee.jpg", tmp_path / "m.gif"
        )
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    with pytest.raises(ImageReadError, match="broken.jpg"):
        write_matches_picture(broken, DATA / "coffee.jpg", tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()


def test_an_image_beyond_the_pixel_limit_is_refused_before_decoding(tmp_path):
    # A header-only fake: decoded, it fails otherwise ("cannot decode").
    huge = tmp_path / "huge.png"
    huge.write_bytes(png_of_size(20000, 20000))
    with pytest.raises(ImageReadError, match="20000 x 20000 pixels is more than"):
        write_matches_picture(huge, DATA / "coffee.jpg", tmp_path / "m.png")
    small = {"max_pixels": 1000, **FAST_OPTIONS}
    with pytest.raises(ImageReadError, match="max_pixels=1000"):
        write_matches_picture(
            DATA / "coffee.jpg", huge, tmp_path / "m.png", descriptor_options=small
        )
    assert not (tmp_path / "m.png").exists()


def test_the_search_page_links_each_verified_hit_to_its_picture(tmp_path):
    queries = tmp_path / "queries"
    queries.mkdir()
    for name in ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"]:
        warped_copy(name, queries / name)
    database, _ = vlad.extract_images(DATA, FAST_OPTIONS, n_jobs=2)
    query_sets, _ = vlad.extract_images(queries, FAST_OPTIONS, n_jobs=2)
    # Any codebook will do: spatial verification decides what is linked.
    codebook = vlad.Codebook(np.ascontiguousarray(database.descriptors[::400][:8]))
    options = vlad.EncodingOptions(aggregator="sparse")
    index = build_index(vlad.encode(database, codebook, options), database.names)
    results = index.search(
        vlad.encode(query_sets, codebook, options), 4, query_names=query_sets.names
    )
    results = rerank_spatially(results, query_sets, database, depth=4)
    page = tmp_path / "results.html"
    report = write_search_page(
        page,
        results,
        images=DATA,
        query_images=queries,
        descriptor_sets=(query_sets, database),
    )
    verified = {
        (result.query, name)
        for result in results
        for name, inliers in zip(result.names, result.inliers, strict=True)
        if inliers >= MIN_INLIERS
    }
    assert len(verified) >= 3 and report.n_matches == len(verified)
    linked = {}
    for row in parse_page(page).find("section", "row"):
        query = row.find(cls="query")[0].find(cls="name")[0].content()
        for card in row.find("li"):
            links = card.find("a", "matches")
            if links:
                name = card.find(cls="name")[0].content()
                linked[(query, name)] = links[0]
    assert set(linked) == verified
    for (query, name), link in linked.items():
        picture = cv2.imread(str(source_file(page, link.attributes["href"])))
        assert picture is not None and picture.shape[0] <= 360
        result = next(result for result in results if result.query == query)
        inliers = int(result.inliers[result.names.index(name)])
        assert link.content() == f"{inliers} inliers"
    # Made once: the next page reuses the pictures.
    pictures = {
        path: path.stat().st_mtime_ns
        for path in (tmp_path / "results_files" / "matches").iterdir()
    }
    write_search_page(
        page,
        results,
        images=DATA,
        query_images=queries,
        descriptor_sets=(query_sets, database),
    )
    assert {path: path.stat().st_mtime_ns for path in pictures} == pictures
    # A page beside it links the same pictures, unchanged.
    beside = write_search_page(
        tmp_path / "again.html",
        results,
        images=DATA,
        query_images=queries,
        descriptor_sets=(query_sets, database),
    )
    again = {
        path.name: path.read_bytes()
        for path in (tmp_path / "again_files" / "matches").iterdir()
    }
    assert beside.n_matches == report.n_matches
    assert again == {path.name: path.read_bytes() for path in pictures}
    assert all(  # linked, not copied
        (tmp_path / "again_files" / "matches" / path.name).stat().st_ino
        == path.stat().st_ino
        for path in pictures
    )


def test_the_caption_is_written_over_the_query_images_top_left_only():
    """Black text on a white box; the rest of the picture as without it."""
    grey = np.full((200, 150, 3), 128, np.uint8)
    points = np.array([[10.0, 190.0]])
    plain = draw_matches(grey, grey, points, points)
    captioned = draw_matches(grey, grey, points, points, caption="12 inliers")
    changed = np.argwhere((plain != captioned).any(axis=2))
    assert changed.size and changed[:, 1].max() < 150 and changed[:, 0].max() < 40
    box = captioned[: changed[:, 0].max() + 1, : changed[:, 1].max() + 1]
    assert (box == 255).all(axis=2).mean() > 0.5 and (box < 64).all(axis=2).any()
