"""A user pipeline for the ``stream-edge`` command tests: input -> apply -> output."""

import os


def build(app):
    sdf = app.dataframe(app.topic(os.environ["EDGE_TEST_INPUT"]))
    sdf = sdf.apply(lambda value: {**value, "doubled": value["n"] * 2})
    sdf.to_topic(app.topic(os.environ["EDGE_TEST_OUTPUT"]))
