"""Loopback HTTP servers that speak each provider's real wire format (tests only).

Each server runs on 127.0.0.1 with an ephemeral port in a background thread and
records every request. Tests script faults (error statuses with Retry-After,
slow replies, streams that break part way) and canned chat replies.
"""
