"""``StreamingDataFrame.concat``: one dataframe fed by two (two topics, or two branches of one).

The result's node is a merge of the last node of both inputs (``Stream.merge``: one node, two
parents), as the joins' is (``joins/base.py``): each topic's tree is still composed into its own generated executor,
and both continue into the operations added to the concatenated dataframe (composed when the
application runs, so operations added after ``concat`` are included).

Dataframes of different topics are processed in timestamp order per partition number, as Quix
Streams 3.28 does (``RowConsumer.order_by_timestamp``).

Example::

    readings = app.dataframe(app.topic("readings-eu"))
    others = app.dataframe(app.topic("readings-us"))
    merged = readings.concat(others)          # every record of both topics, by timestamp
    merged["celsius"] = (merged["fahrenheit"] - 32) / 1.8
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict

from .seams import Dataframe

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic

__all__ = ("concat_dataframes",)


def concat_dataframes(left: Dataframe, right: Dataframe) -> Dataframe:
    """A new dataframe receiving every record of ``left`` and of ``right`` (both of one application)."""
    if right.processing_context is not left.processing_context:
        raise ValueError("concat() needs dataframes of the same Application")
    if right.stream is left.stream:
        raise ValueError("concat() of a dataframe with itself would process every record twice; "
                         "concatenate two different branches instead")
    out = left.stream.merge(right.stream)
    topics: Dict[str, "Topic"] = {}
    for topic in (*left.topics, *right.topics):
        topics.setdefault(topic.name, topic)
    if len(topics) > 1:
        consumer = getattr(left.processing_context, "consumer", None)
        if consumer is not None:  # records of both topics in timestamp order, as Quix processes them
            consumer.order_by_timestamp(list(topics))
        # As in Quix Streams: the stream of several topics is named by them (its state stores are
        # fed by all of them: "a--b", the sorted names).
        return left.__dataframe_clone__(*topics.values(), stream=out)
    # Branches of one topic keep their stream id, or join both when they differ.
    return left.__dataframe_clone__(stream=out, stream_id="--".join(sorted({left.stream_id, right.stream_id})))
