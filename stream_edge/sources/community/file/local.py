"""LocalFileSource: a FileSource over the local file system."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from .base import FileSource

__all__ = ("LocalFileSource",)


class LocalFileSource(FileSource):
    """Produce the records of every file under a local folder (or of one file).

    Example::

        source = LocalFileSource("data/readings", file_format="json", compression="gzip",
                                 has_partition_folders=True, replay_speed=0)
        sdf = app.dataframe(source=source)
    """

    def get_file_list(self, filepath: Path) -> Iterable[Path]:
        """Files in lexicographic order; a folder's files come where the folder sorts."""
        if not filepath.exists():
            raise FileNotFoundError(f"file source {self.name}: {filepath} does not exist")
        if filepath.is_file():
            return [filepath]
        return self._walk(filepath)

    def _walk(self, folder: Path) -> Iterator[Path]:
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                yield from self._walk(entry)
            else:
                yield entry

    def read_file(self, filepath: Path) -> BinaryIO:
        return open(filepath, "rb")

    def file_partition_counter(self) -> int:
        """The number of folders directly under ``filepath``."""
        if not self._filepath.is_dir():
            return 1
        return sum(1 for entry in self._filepath.iterdir() if entry.is_dir())
