"""Topics: definitions, admin, manager."""

from .admin import TopicAdmin
from .exceptions import *  # noqa: F401,F403
from .manager import TopicManager, affirm_ready_for_create
from .topic import KafkaMessage, TimestampExtractor, Topic, TopicConfig, TopicType
from .utils import merge_headers

__all__ = ("KafkaMessage", "TimestampExtractor", "Topic", "TopicAdmin", "TopicConfig", "TopicManager", "TopicType",
           "affirm_ready_for_create", "merge_headers")
