"""Adapters that hand akasha's retrieval to other frameworks (LangChain).

Each adapter module imports its framework only when it is used, so
``import akasha`` never imports LangChain.
"""
