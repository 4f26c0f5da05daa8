"""LangChain: EnsembleRetriever(BM25Retriever + Chroma), run inside bench/.venvs/langchain.

Opening = load the files (TextLoader), split them (RecursiveCharacterTextSplitter,
1,000 characters), sync them into a persistent Chroma collection through
LangChain's indexing API (SQLRecordManager, cleanup="incremental": LangChain's
own way of not re-embedding unchanged documents), and build the in-memory
BM25Retriever (LangChain cannot persist it). Search = EnsembleRetriever with
equal weights, the documented hybrid recipe.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402

# Imported before the clock starts: the timings measure the library's work, not its import.
from langchain_chroma import Chroma  # noqa: E402
from langchain_classic.indexes import SQLRecordManager  # noqa: E402
from langchain_classic.retrievers import EnsembleRetriever  # noqa: E402
from langchain_community.document_loaders import TextLoader  # noqa: E402
from langchain_community.retrievers import BM25Retriever  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.indexing import index  # noqa: E402
from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402


def open_system(job, embedder):
    class SharedEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return embedder.embed(list(texts)).tolist()

        def embed_query(self, text):
            return embedder.embed_query(text).tolist()

    work = Path(job["work"])
    k = job["k"]
    files = sorted(p for p in Path(job["corpus"]).rglob("*.txt"))
    docs = [d for f in files for d in TextLoader(str(f), encoding="utf-8").load()]
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100)
    chunks = splitter.split_documents(docs)
    store = Chroma("bench", embedding_function=SharedEmbeddings(), persist_directory=str(work / "chroma"))
    records = SQLRecordManager("chroma/bench", db_url=f"sqlite:///{work / 'records.sqlite'}")
    records.create_schema()
    stats = index(chunks, records, store, cleanup="incremental", source_id_key="source", batch_size=500)
    bm25 = BM25Retriever.from_documents(chunks, k=k)
    ensemble = EnsembleRetriever(retrievers=[bm25, store.as_retriever(search_kwargs={"k": k})], weights=[0.5, 0.5])

    def search(query, top):
        return [d.page_content for d in ensemble.invoke(query)[:top]]

    return search, len(chunks), {"index_stats": stats}


if __name__ == "__main__":
    protocol.run(open_system)
