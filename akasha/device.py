"""Where local models run: ``device="auto"`` picks CUDA, then Apple MPS, then the CPU.

Local models (``hf:``/``sentence_transformers:`` embeddings, the ``"local"``/``"bge"`` and
``cross_encoder`` rerankers, ``hf:`` chat models) take a ``device``: ``"auto"`` (the default),
``"cpu"``, ``"cuda"``, ``"cuda:<n>"``, ``"mps"``, ``"xpu"`` or ``"xpu:<n>"``. First match wins:
an explicit device other than ``"auto"``; the ``AKASHA_DEVICE`` environment variable; detection.

Detection asks torch only when the machine hints at an accelerator (an NVIDIA or ROCm driver, macOS
on arm64; ``CUDA_VISIBLE_DEVICES`` of ``""`` or ``-1`` counts as none), so CPU-only runs keep torch
out of the process. The device never changes an embedder's name (same model, same vectors).
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import logging
import os
import platform
import re
import shutil
import sys

from akasha.embeddings import WRAPPER_PREFIXES
from akasha.errors import ConfigError

logger = logging.getLogger(__name__)

#: Environment variable naming the device when no explicit one is given.
ENV_VARIABLE = "AKASHA_DEVICE"
#: The value that asks for detection.
AUTO = "auto"

_DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?|xpu(:\d+)?)$")
_ACCEPTED = "'auto', 'cpu', 'cuda', 'cuda:<n>', 'mps', 'xpu' or 'xpu:<n>'"


def validate_device(value: object, where: str = "device") -> str:
    """``value`` normalised (stripped, lower case); ConfigError naming ``where`` when it is not a device."""
    if not isinstance(value, str) or not _DEVICE_PATTERN.match(value.strip().lower()):
        raise ConfigError(f"{where} must be {_ACCEPTED}, got {value!r}")
    return value.strip().lower()


def requested_device(device: str | None = AUTO) -> str:
    """The device asked for before detection: an explicit one, else ``AKASHA_DEVICE``, else ``"auto"``."""
    if device is not None and validate_device(device) != AUTO:
        return validate_device(device)
    from_env = os.environ.get(ENV_VARIABLE, "").strip()
    if from_env:
        return validate_device(from_env, f"the environment variable {ENV_VARIABLE}")
    return AUTO


def resolve_device(device: str | None = AUTO) -> str:
    """The device a local model loads onto: :func:`requested_device`, with ``"auto"`` detected."""
    requested = requested_device(device)
    return detect_device() if requested == AUTO else requested


#: Model-string prefixes of the local models that take a ``device``, per RAG option.
LOCAL_MODEL_PREFIXES: dict[str, tuple[str, ...]] = {
    "embeddings": ("hf", "sentence_transformers"),
    "model": ("hf",),
    "reranker": ("local", "bge"),
}


def device_options(option: str, spec: object, device: str | None) -> dict[str, str]:
    """``{"device": device}`` for a model string of a local model (``option``: "embeddings", "model" or
    "reranker") when ``device`` is not ``"auto"``, else ``{}`` (remote models and objects, or "auto").
    A wrapped embeddings string (``"prefixed:e5:hf:<model>"``) gets what its inner string gets.
    """
    if device is None or validate_device(device) == AUTO or not isinstance(spec, str):
        return {}
    prefix, _, rest = spec.partition(":")
    prefix = prefix.strip().lower()
    if option == "embeddings" and prefix in WRAPPER_PREFIXES:
        from akasha.embeddings.prefixed import split_family

        return device_options(option, split_family(rest)[1], device)  # "<family>:<inner embeddings>"
    return {"device": validate_device(device)} if prefix in LOCAL_MODEL_PREFIXES.get(option, ()) else {}


@functools.cache
def detect_device() -> str:
    """``"cuda"``, ``"mps"`` or ``"cpu"`` for this machine (once per process; torch imported only on a hint)."""
    if importlib.util.find_spec("torch") is None:
        logger.debug("device auto: cpu (torch is not installed)")
        return "cpu"
    if _cuda_hint():
        if _torch_confirms("cuda"):
            logger.info("device auto: cuda (an accelerator driver is present and torch sees a device)")
            return "cuda"
        logger.info("device auto: cpu (an accelerator driver is present but this torch cannot use it)")
    elif _mps_hint():
        if _torch_confirms("mps"):
            logger.info("device auto: mps (Apple silicon, torch's MPS backend is available)")
            return "mps"
        logger.info("device auto: cpu (Apple silicon, but torch's MPS backend is not available)")
    else:
        logger.debug("device auto: cpu (no NVIDIA/ROCm driver, not Apple silicon)")
    return "cpu"


def _cuda_hint() -> bool:
    """True when the machine shows an NVIDIA or ROCm driver (no torch import)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return _nvidia_present() or _rocm_present()


def _nvidia_present() -> bool:
    """The NVIDIA kernel driver (Linux) or ``nvidia-smi`` on the PATH (Linux, Windows)."""
    if os.path.exists("/proc/driver/nvidia/version") or glob.glob("/dev/nvidia[0-9]*"):
        return True
    return shutil.which("nvidia-smi") is not None


def _rocm_present() -> bool:
    """AMD's ROCm compute device (torch's ROCm builds answer to ``"cuda"``)."""
    return sys.platform.startswith("linux") and os.path.exists("/dev/kfd")


def _mps_hint() -> bool:
    """macOS on Apple silicon."""
    return sys.platform == "darwin" and platform.machine() == "arm64"


def _torch_confirms(kind: str) -> bool:
    """Import torch and ask whether ``kind`` (``"cuda"`` or ``"mps"``) is usable; False on any failure."""
    try:
        import torch

        if kind == "cuda":
            return bool(torch.cuda.is_available())
        backend = getattr(torch.backends, "mps", None)
        return bool(backend is not None and backend.is_available())
    except Exception as exc:  # a broken torch install must not stop a CPU run
        logger.warning("device auto: could not ask torch about %s (%s: %s); using the CPU", kind,
                       type(exc).__name__, exc)
        return False


__all__ = ["AUTO", "ENV_VARIABLE", "LOCAL_MODEL_PREFIXES", "detect_device", "device_options",
           "requested_device", "resolve_device", "validate_device"]
