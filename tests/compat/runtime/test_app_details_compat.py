"""Application details as quixstreams 3.28.1 shows them (real broker): a source killed after its
``shutdown_timeout`` fails with exit code -9, a source that cannot start (it does not pickle with the
``spawn`` method) fails without a pid; ``configure_logging`` with and without handlers of the
program's own; pydantic's ``ValidationError`` from ``ApplicationConfig`` (unknown keyword, frozen
field) and ``ConnectionConfig`` (a setting that is not a connection setting, unless
``ignore_extras``); topics defined after the dataframe are created by the run; a commit on a deleted
topic; the data-lake sink's defaults (read from each package's source: quixstreams' sink needs
``quixportal``, which is not on PyPI). One shared run per package; one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-app-details")]  # one worker

PROGRAM = r'''
import logging
import os
import re
import tempfile
import threading
import time
import uuid

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from quixstreams import Application
from quixstreams.app import ApplicationConfig
from quixstreams.kafka.configuration import ConnectionConfig
from quixstreams.logging import LOGGER_NAME, configure_logging
from quixstreams.sources import Source, SourceException

SUFFIX = uuid.uuid4().hex[:8]


def masked(text):
    text = text.replace(SUFFIX, "S").replace(LOGGER_NAME, "PKG")
    return re.sub(r"errors\.pydantic\.dev/[0-9.]+/", "errors.pydantic.dev/V/", text)


def app():
    return Application(broker_address=BROKER, consumer_group="g-" + uuid.uuid4().hex[:8], loglevel=None,
                       state_dir=tempfile.mkdtemp(), auto_offset_reset="earliest")


class Stubborn(Source):
    """Ignores the request to stop: the application kills it after its shutdown_timeout."""

    def __init__(self, name, shutdown_timeout, running_flag):
        super().__init__(name=name, shutdown_timeout=shutdown_timeout)
        self.running_flag = running_flag

    def run(self):
        open(self.running_flag, "w").close()
        while True:
            time.sleep(0.05)

    def stop(self):
        pass


class Unpicklable(Source):
    def __init__(self, name):
        super().__init__(name=name, shutdown_timeout=2)
        self.lock = threading.Lock()

    def run(self):
        pass


def failure(label, application):
    try:
        application.run()
        print(label, "no error")
    except SourceException as exc:
        print(label, exc.exitcode, repr(exc.__cause__), type(exc.__context__).__name__,
              masked(str(exc)).replace(str(exc.pid), "PID"))


def main():
    print("== sources")
    application = app()
    running_flag = os.path.join(tempfile.mkdtemp(), "running")
    application.add_source(Stubborn(name="stubborn-" + SUFFIX, shutdown_timeout=1, running_flag=running_flag))

    def stop_once_the_source_runs():  # a spawned source can take seconds to start on a busy machine
        deadline = time.monotonic() + 120
        while not os.path.exists(running_flag) and time.monotonic() < deadline:
            time.sleep(0.05)
        application.stop()

    threading.Thread(target=stop_once_the_source_runs, daemon=True).start()
    failure("killed at stop", application)
    os.environ["STREAM_EDGE_SOURCE_START_METHOD"] = "spawn"  # quixstreams always spawns
    application = app()
    application.add_source(Unpicklable("unpicklable-" + SUFFIX))
    failure("cannot start", application)

    print("== logging")
    log = logging.getLogger(LOGGER_NAME)
    saved = list(log.handlers)
    log.handlers.clear()

    def show(label, result):
        handlers = [(type(h).__name__, logging.getLevelName(h.level), h.formatter._fmt if h.formatter else None)
                    for h in log.handlers]
        print(label, result, logging.getLevelName(log.level), log.propagate, masked(str(handlers)))

    show("no level", configure_logging(None))
    show("no handlers", configure_logging("INFO"))
    own = log.handlers[0]
    show("again", configure_logging("DEBUG", name="other", pid=False))
    print("same handler", log.handlers[0] is own)
    log.handlers.clear()
    log.addHandler(logging.StreamHandler())
    show("the program's handler", configure_logging("WARNING"))
    log.handlers[:] = saved

    print("== config errors")
    broker = ConnectionConfig(bootstrap_servers=BROKER)
    config = ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="")
    for label, make in [
        ("unknown keyword", lambda: ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="",
                                                                  bogus=1)),
        ("two unknown", lambda: ApplicationConfig(broker_address=broker, consumer_group="g", consumer_group_prefix="",
                                                              bogus=1, other="x")),
        ("frozen", lambda: setattr(config, "consumer_group", "x")),
        ("copy unknown", lambda: config.copy(bogus=2)),
        ("librdkafka extra", lambda: ConnectionConfig.from_librdkafka_dict(
            {"bootstrap.servers": "url", "sasl.username": "me", "not.a.setting": "oh_no"})),
        ("librdkafka extra ignored", lambda: ConnectionConfig.from_librdkafka_dict(
            {"bootstrap.servers": "url", "sasl.mechanisms": "plain", "not.a.setting": "oh_no"},
            ignore_extras=True).as_librdkafka_dict()),
        ("keyword extra", lambda: ConnectionConfig(bootstrap_servers="url", linger_ms=5)),
    ]:
        try:
            print(label, "->", make())
        except Exception as exc:
            print(label, type(exc).__module__, type(exc).__name__, isinstance(exc, ValueError), masked(str(exc)))

    print("== timestamps")
    from quixstreams.models import MessageTimestamp
    for args in [(0, 0), (0, 123), (0, -1), (1, 123), (2, 123)]:
        stamp = MessageTimestamp.create(*args)
        print(args, stamp.type, stamp.milliseconds)

    print("== topics after the dataframe")
    application = Application(broker_address=BROKER, consumer_group="g-" + SUFFIX, loglevel=None,
                              state_dir=tempfile.mkdtemp(), auto_create_topics=True)
    topic_in = application.topic("in-" + SUFFIX)
    sdf = application.dataframe(topic_in)
    topic_out = application.topic("out-" + SUFFIX)
    application.run(timeout=2)
    names = AdminClient({"bootstrap.servers": BROKER}).list_topics(timeout=10).topics
    print("created by the run", topic_in.name in names, topic_out.name in names)

    print("== commit on a deleted topic")
    name = "deleted-" + SUFFIX
    admin = AdminClient({"bootstrap.servers": BROKER})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    application = app()
    with application.get_producer() as producer:
        producer.produce(name, key=b"k", value=b"v")
    with application.get_consumer(auto_commit_enable=False) as consumer:
        consumer.subscribe([name])
        message, deadline = None, time.monotonic() + 30
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1)
        admin.delete_topics([name])[name].result()
        gone_by = time.monotonic() + 30  # the deletion reaches the metadata: wait for it, not a fixed time
        while name in admin.list_topics(timeout=10).topics and time.monotonic() < gone_by:
            time.sleep(0.1)
        for label, commit in [("message", lambda: consumer.commit(message=message, asynchronous=False)),
                              ("offsets", lambda: consumer.commit(offsets=[TopicPartition(name, 0, 1)],
                                                                  asynchronous=False))]:
            try:
                print(label, commit())
            except Exception as exc:
                print(label, type(exc).__name__, masked(str(exc)))

    print("== data-lake sink parameters")
    # quixstreams' QuixTSDataLakeSink needs quixportal (not on PyPI): each side reads its own source
    import ast
    import quixstreams
    path = os.path.join(os.path.dirname(quixstreams.__file__), "sinks", "core", "quix_ts_datalake_sink.py")
    tree = ast.parse(open(path).read())
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    print("module-level silence_chatty_loggers", "silence_chatty_loggers" in functions)
    sink_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "QuixTSDataLakeSink")
    init = next(n for n in sink_class.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    names = [a.arg for a in init.args.args]
    defaults = dict(zip(names[len(names) - len(init.args.defaults):], init.args.defaults))
    for param in ("workspace_id", "hive_columns", "timestamp_column", "silence_azure_http_logs"):
        print(param, ast.literal_eval(defaults[param]))
    prop = [n for n in sink_class.body if isinstance(n, ast.FunctionDef) and n.name == "s3_bucket"]
    print("s3_bucket property", bool(prop) and any(getattr(d, "id", "") == "property" for d in prop[0].decorator_list))
    print("before setup", [c.value for c in ast.walk(prop[0]) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                           and "Call setup" in c.value])


if __name__ == "__main__":
    main()
'''

SECTIONS = ["sources", "logging", "config errors", "timestamps", "topics after the dataframe", "commit on a deleted topic",
            "data-lake sink parameters"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)


@pytest.mark.parametrize("section", SECTIONS)
def test_application_details_match_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_a_killed_or_unstartable_source_fails_with_its_exit_code(outputs):
    shown = compare_section(outputs, "sources")
    assert "killed at stop -9 None NoneType stubborn-S with PID PID failed with exitcode -9" in shown
    # no pid, no exit code (both None, printed as PID): the process never started
    assert "cannot start None None TypeError unpicklable-S with PID PID failed with exitcode PID" in shown


def test_configuration_errors_are_pydantic_validation_errors(outputs):
    shown = compare_section(outputs, "config errors")
    assert "unknown keyword pydantic_core._pydantic_core ValidationError True" in shown
    assert "Instance is frozen [type=frozen_instance" in shown
    assert "not_a_setting\n  Extra inputs are not permitted" in shown
    assert "librdkafka extra ignored -> {'bootstrap.servers': 'url', 'sasl.mechanism': 'PLAIN'}" in shown
    assert "no handlers True INFO False [('StreamHandler', 'INFO'" in compare_section(outputs, "logging")


def test_data_lake_sink_defaults_and_a_deleted_topic(outputs):
    shown = compare_section(outputs, "data-lake sink parameters")
    assert "(0, 0) 0 0\n(0, 123) 0 123" in compare_section(outputs, "timestamps")
    assert "timestamp_column ts_ms" in shown and "module-level silence_chatty_loggers True" in shown
    assert "before setup ['s3_bucket not initialized. Call setup() first.']" in shown
    assert "UNKNOWN_TOPIC_OR_PART" in compare_section(outputs, "commit on a deleted topic")
