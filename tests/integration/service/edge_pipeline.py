"""A user pipeline for the ``stream-edge`` command tests: input -> apply -> output, and with
``EDGE_TEST_LAKE`` set, the data-lake sink (silence threshold 3 s: a key stays live through a parallel run's stalls) next to it."""

import logging
import os


def build(app):
    # A careless pipeline logging a secret: the service's logs must still not show it.
    logging.getLogger("stream_edge.user").info("using key %s", os.environ.get("AWS_SECRET_ACCESS_KEY"))
    sdf = app.dataframe(app.topic(os.environ["EDGE_TEST_INPUT"]))
    sdf = sdf.apply(lambda value: {**value, "doubled": value["n"] * 2})
    sdf.to_topic(app.topic(os.environ["EDGE_TEST_OUTPUT"]))
    if os.environ.get("EDGE_TEST_LAKE"):
        from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

        sdf.sink(QuixTSDataLakeSink(s3_prefix="lake", table_name="numbers", workspace_id="", hive_columns=[],
                                    storage_url=os.environ["EDGE_TEST_LAKE"], stream_timeout_ms=3000,
                                    on_stream_timeout=lambda key: None))
