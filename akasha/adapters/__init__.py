"""Adapters that hand akasha's retrieval to other frameworks (LangChain, LlamaIndex).

Each imports its framework only when used: ``import akasha`` never imports LangChain or LlamaIndex.
"""
