"""Peer libraries measured beside akasha, each run inside its own venv.

``venvs.py`` creates ``bench/.venvs/<peer>`` and installs the peer there (never
into the project's environment); ``runner.py`` runs a peer script inside its
venv as a subprocess and exchanges one JSON job and one JSON result with it.
The ``peer_*.py`` scripts are what runs inside the venvs: they import only the
peer library, numpy and ``shared_embed.py`` (copied in by path, not by import
of akasha), so the peers and akasha use the same embedding function.
"""
