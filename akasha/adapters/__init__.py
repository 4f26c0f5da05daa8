"""Adapters that hand akasha's retrieval to other frameworks (LangChain, LlamaIndex).

Each adapter module imports its framework only when it is used, so
``import akasha`` never imports LangChain or LlamaIndex.
"""
