"""LlamaIndex: VectorStoreIndex + BM25Retriever fused by QueryFusionRetriever, in bench/.venvs/llamaindex.

Opening = read the files (SimpleDirectoryReader, file names as document ids),
then either build the index (first run) or load the persisted one and call
``refresh_ref_docs`` (LlamaIndex's own way of re-embedding only changed
documents), persist, and build the BM25Retriever from the docstore. Chunks are
1,000 characters (SentenceSplitter with a character tokenizer, metadata not
counted) so chunk counts match the other systems. Search =
QueryFusionRetriever(vector, bm25, mode="reciprocal_rerank", num_queries=1:
no LLM query generation).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402

# Imported before the clock starts: the timings measure the library's work, not its import.
from llama_index.core import Settings, SimpleDirectoryReader, StorageContext, VectorStoreIndex, load_index_from_storage  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.retrievers.bm25 import BM25Retriever  # noqa: E402


def open_system(job, embedder):
    class SharedEmbedding(BaseEmbedding):
        def _get_text_embeddings(self, texts):
            return embedder.embed(list(texts)).tolist()

        def _get_text_embedding(self, text):
            return embedder.embed([text])[0].tolist()

        def _get_query_embedding(self, query):
            return embedder.embed_query(query).tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

    Settings.embed_model = SharedEmbedding(model_name="bench-shared", embed_batch_size=256)
    Settings.llm = MockLLM()
    splitter = SentenceSplitter(chunk_size=1000, chunk_overlap=0, tokenizer=list, paragraph_separator="\n\n",
                                include_metadata=False)
    Settings.transformations = [splitter]
    persist = Path(job["work"]) / "storage"
    # exclude_hidden=False: the corpus lives under bench/.data, which the reader would treat as hidden.
    documents = SimpleDirectoryReader(job["corpus"], recursive=True, filename_as_id=True, required_exts=[".txt"],
                                      exclude_hidden=False).load_data()
    if (persist / "docstore.json").exists():
        index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(persist)))
        refreshed = sum(index.refresh_ref_docs(documents))
    else:
        index = VectorStoreIndex.from_documents(documents, transformations=[splitter])
        refreshed = len(documents)
    index.storage_context.persist(persist_dir=str(persist))
    k = job["k"]
    bm25 = BM25Retriever.from_defaults(docstore=index.docstore, similarity_top_k=k)
    fusion = QueryFusionRetriever([index.as_retriever(similarity_top_k=k), bm25], similarity_top_k=k, num_queries=1,
                                  mode="reciprocal_rerank", use_async=False, llm=MockLLM())

    def search(query, top):
        return [n.node.get_content() for n in fusion.retrieve(query)[:top]]

    return search, len(index.docstore.docs), {"refreshed_docs": refreshed}


if __name__ == "__main__":
    protocol.run(open_system)
