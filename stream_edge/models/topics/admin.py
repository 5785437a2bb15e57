"""TopicAdmin: create and inspect topics through confluent-kafka's AdminClient."""

from __future__ import annotations

import logging
import pprint
import time
from typing import Any, Dict, List, Mapping, Optional, Union

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from stream_edge.kafka.configuration import ConnectionConfig, connection_dict

from .exceptions import CreateTopicFailure, CreateTopicTimeout
from .topic import Topic, TopicConfig

__all__ = ("TopicAdmin",)

logger = logging.getLogger("stream_edge")


class TopicAdmin:
    """Topic-level admin operations.

    Example::

        admin = TopicAdmin("localhost:9092")
        admin.create_topics([Topic("t", config=TopicConfig(num_partitions=2))])
    """

    def __init__(self, broker_address: Union[str, ConnectionConfig], logger: logging.Logger = logger,
                 extra_config: Optional[Mapping] = None) -> None:
        self._config = {**(extra_config or {}), **connection_dict(broker_address)}
        self._inner: Optional[AdminClient] = None

    @property
    def admin_client(self) -> AdminClient:
        if self._inner is None:
            self._inner = AdminClient(self._config)
        return self._inner

    def close(self) -> None:
        """Drop the admin client (it stops reconnecting); the next call creates a new one."""
        self._inner = None

    def list_topics(self, timeout: float = -1) -> Dict[str, Any]:
        """Topic names and their metadata."""
        return self.admin_client.list_topics(timeout=timeout).topics

    def inspect_topics(self, topic_names: List[str], timeout: float = 30) -> Dict[str, Optional[TopicConfig]]:
        """The TopicConfig of each named topic that exists (None for the others)."""
        existing = self.list_topics(timeout=timeout)
        out: Dict[str, Optional[TopicConfig]] = {name: None for name in topic_names}
        present = [n for n in topic_names if n in existing and not existing[n].error]
        if not present:
            return out
        resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in present]
        futures = self.admin_client.describe_configs(resources, request_timeout=timeout)
        for resource, future in futures.items():
            entries = future.result(timeout=timeout)
            meta = existing[resource.name]
            partitions = meta.partitions
            replicas = len(partitions[0].replicas) if partitions else 1
            extra = {k: v.value for k, v in entries.items() if v.value is not None}  # defaults too, as Quix
            out[resource.name] = TopicConfig(num_partitions=len(partitions), replication_factor=replicas,
                                             extra_config=extra)
        return out

    def create_topics(self, topics: List[Topic], timeout: float = 30, finalize_timeout: float = 60) -> None:
        """Create the topics that do not exist yet and wait until the broker lists them."""
        if not topics:
            return
        existing = self.list_topics(timeout=timeout)
        todo = [t for t in topics if t.name not in existing]
        if not todo:
            return
        for topic in todo:
            logger.info("creating topic '%s' (%s)", topic.name, topic.config)
        futures = self.admin_client.create_topics([t.as_newtopic() for t in todo], request_timeout=timeout)
        self._confirm_created(futures, finalize_timeout, timeout)

    def _confirm_created(self, futures: Dict[str, Any], finalize_timeout: float, timeout: float) -> None:
        """Wait up to ``finalize_timeout`` seconds for the creation results, then for the broker to
        list the new topics; raise as 3.28.1 does: ``CreateTopicFailure`` naming each refused topic
        and the broker's reason, ``CreateTopicTimeout`` naming those still unconfirmed (so
        ``finalize_timeout=0`` never waits)."""
        deadline = time.monotonic() + finalize_timeout
        waiting = dict(futures)
        failures: Dict[str, str] = {}
        while waiting and time.monotonic() < deadline:
            for name, future in list(waiting.items()):
                if not future.done():
                    continue
                del waiting[name]
                try:
                    future.result()
                    logger.info('Topic "%s" has been created', name)
                except KafkaException as exc:
                    error = exc.args[0]
                    code = error.code() if isinstance(error, KafkaError) else None
                    if code == KafkaError.TOPIC_ALREADY_EXISTS:  # e.g. created meanwhile by another instance
                        logger.info('Topic "%s" already exists', name)
                    elif code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                        failures[name] = (f'Failed to create topic "{name}"; verify if "Create" and "Read" '
                                          f"operations are allowed for your credentials")
                    else:
                        failures[name] = error.str() if isinstance(error, KafkaError) else str(error)
                except (TypeError, ValueError) as exc:
                    failures[name] = str(exc)
            if waiting:
                time.sleep(0.05)
        if failures:
            raise CreateTopicFailure(f"Failed to create topics: {failures}")
        # created: wait until the broker lists them with their partitions (metadata propagation)
        pending = set(futures) - set(waiting)
        while pending and time.monotonic() < deadline:
            listed = self.list_topics(timeout=timeout)
            pending = {n for n in pending if n not in listed or listed[n].error or not listed[n].partitions}
            if pending:
                time.sleep(0.2)
        unconfirmed = sorted(set(waiting) | pending)
        if unconfirmed:
            raise CreateTopicTimeout("Timed out waiting for creation status for topics:\n"
                                     + pprint.pformat(unconfirmed))
