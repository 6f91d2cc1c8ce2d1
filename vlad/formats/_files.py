"""Safe files: the one reader of ``.npy`` and ``.npz`` files, record archives
and atomic writes, for every format of this package.

They live in :mod:`vlad.core._files` and :mod:`vlad.core._writing`, the lowest
floor, because :class:`vlad.Codebook` and :class:`vlad.DescriptorSets` save
and load themselves with them; this module is where the formats take them
from.
"""

from __future__ import annotations

from vlad.core._files import (
    atomic_write,
    atomic_writes,
    check_format_version,
    check_writable_folder,
    npz_member_header,
    parse_record,
    read_numpy_file,
    read_record_archive,
    save_record_archive,
)

__all__ = [
    "atomic_write",
    "atomic_writes",
    "check_format_version",
    "check_writable_folder",
    "npz_member_header",
    "parse_record",
    "read_numpy_file",
    "read_record_archive",
    "save_record_archive",
]
