"""Models: topics, serializers, timestamps, rows, message context."""

from .messagecontext import MessageContext
from .rows import Row
from .serializers import *  # noqa: F401,F403
from .timestamps import MessageTimestamp, TimestampType
from .topics import Topic, TopicAdmin, TopicConfig, TopicManager
from .types import *  # noqa: F401,F403

__all__ = ("MessageContext", "MessageTimestamp", "Row", "TimestampType", "Topic", "TopicAdmin",
           "TopicConfig", "TopicManager")
