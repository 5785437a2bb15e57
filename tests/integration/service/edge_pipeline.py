"""A user pipeline for the ``stream-edge`` command tests: input -> apply -> output."""

import logging
import os


def build(app):
    # A careless pipeline logging a secret: the service's logs must still not show it.
    logging.getLogger("stream_edge.user").info("using key %s", os.environ.get("AWS_SECRET_ACCESS_KEY"))
    sdf = app.dataframe(app.topic(os.environ["EDGE_TEST_INPUT"]))
    sdf = sdf.apply(lambda value: {**value, "doubled": value["n"] * 2})
    sdf.to_topic(app.topic(os.environ["EDGE_TEST_OUTPUT"]))
