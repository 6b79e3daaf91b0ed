"""Transports move JSON-RPC messages; they never match ids (see :mod:`.base`)."""

from .base import MessageSink, Transport

__all__ = ["MessageSink", "Transport"]
