"""The real-view benchmark: real photographs of scenes seen again from another
viewpoint, distance, time of day, season or camera, among distractors.

Built from a manifest of files in public git repositories (pinned commits)
and Debian packages (pinned versions), every file checked by its sha256::

    python -m benchmarks.realviews.build OUT --repos DIR

Modules:

- :mod:`benchmarks.realviews.build`: the folder of images, its ground truth
  (leave-one-out) and its record;
- :mod:`benchmarks.realviews.run`: named variants of vlad's search on a
  built folder, timed and evaluated overall, per tier and per family;
- :mod:`benchmarks.realviews.page`: the Markdown page of a run's JSON.

Importing this package imports none of its modules.
"""

__all__ = ["build", "page", "run"]
