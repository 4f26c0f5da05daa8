"""Shared plumbing for hosted and HTTP model providers: connections (``*_conn``), fault translation
(:mod:`.faults`), retrying streams (:mod:`.streaming`), bounded replies and the request deadline
(:mod:`.bounded`), key redaction (:mod:`.secrets`) and the base of the remote chat models and
embedders (:mod:`.remote`). The retry loop itself is :mod:`akasha.retry` (shared with the store
servers). Nothing here imports a client library at module import time.
"""
