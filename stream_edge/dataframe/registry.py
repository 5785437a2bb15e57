"""DataframeRegistry: the StreamingDataFrames of one Application, by input topic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from .exceptions import DuplicateStreamingDataFrame, GroupByDuplicate

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.core.stream import Stream
    from stream_edge.models.topics import Topic

    from .seams import DataframeSeams

__all__ = ("DataframeRegistry",)


class DataframeRegistry:
    """Keeps each topic's root StreamingDataFrame and the repartition topics of group_by()."""

    def __init__(self) -> None:
        self._roots: Dict[str, "DataframeSeams"] = {}
        self._root_streams: Dict[str, "Stream"] = {}  # each topic's root node, as registered
        self._topics: Dict[str, "Topic"] = {}
        self._groupby_names: set = set()

    @property
    def consumer_topics(self) -> List["Topic"]:
        """The topics a consumer subscribes to (inputs and repartition topics)."""
        return list(self._topics.values())

    def register_root(self, new_sdf: "DataframeSeams") -> None:
        """Register the first StreamingDataFrame of a topic."""
        for topic in new_sdf.topics:
            if topic.name in self._roots:
                raise DuplicateStreamingDataFrame(
                    f"topic '{topic.name}' already has a StreamingDataFrame; reuse it or branch from it")
            self._roots[topic.name] = new_sdf
            self._root_streams[topic.name] = new_sdf.stream
            self._topics[topic.name] = topic

    def register_groupby(self, source_sdf: "DataframeSeams", new_sdf: "DataframeSeams",
                         new_root: bool = True) -> None:
        """Register the StreamingDataFrame of a group_by(): the root of its repartition topic, or
        (``new_root=False``, a re-key in place on one partition) a branch of ``source_sdf``'s tree."""
        name = new_sdf.topics[0].name if new_root else new_sdf.stream_id
        if name in self._groupby_names:
            what = f"repartition topic '{name}'" if new_root else f"stream id '{name}'"
            raise GroupByDuplicate(f"a group_by() with {what} exists already; give it another name")
        self._groupby_names.add(name)
        if new_root:
            self.register_root(new_sdf)

    def compose_all(self, sink: Optional[Callable[[Any, Any, int, Any], None]] = None) -> Dict[str, Callable]:
        """Compose every topic's tree into one executor: ``{topic_name: executor}``.

        Topics joined by ``concat`` or a join share a tree: it is composed once, and each topic
        takes the executor of its own root.
        """
        composed: Dict["Stream", Callable] = {}
        executors: Dict[str, Callable] = {}
        for name, root in self._root_streams.items():
            if root not in composed:
                composed.update(root.compose(sink=sink))
            executors[name] = composed[root]
        return executors

    def __bool__(self) -> bool:
        return bool(self._roots)
