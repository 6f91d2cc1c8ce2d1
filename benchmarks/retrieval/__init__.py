"""The retrieval benchmark: a folder of originals, distractors and queries.

Built from the photographs bundled in ``data/`` and from freely licensed
photographs that Debian packages install, by::

    python -m benchmarks.retrieval.build OUT

Modules:

- :mod:`benchmarks.retrieval.sources`: where the photographs come from and
  their licences;
- :mod:`benchmarks.retrieval.transforms`: the query transforms and the table
  of their parameters;
- :mod:`benchmarks.retrieval.build`: the folder, its ground truth and its
  records;
- :mod:`benchmarks.retrieval.run`: vlad's search variants on a built folder,
  evaluated;
- :mod:`benchmarks.retrieval.page`: the Markdown page of a run's JSON;
- :mod:`benchmarks.retrieval.encodings`: extraction, codebook and encoding
  switches on a built folder, evaluated;
- :mod:`benchmarks.retrieval.encodings_page`: the Markdown page of its JSON.

Importing this package imports none of its modules.
"""

__all__ = [
    "build",
    "encodings",
    "encodings_page",
    "page",
    "run",
    "sources",
    "transforms",
]
