"""Shared plumbing for hosted and HTTP model providers: connections (``*_conn``), fault translation,
retrying streams, bounded replies, key redaction and the base of the remote chat models and embedders
(the retry loop itself is :mod:`akasha.retry`). Nothing here imports a client library at import time.
"""
