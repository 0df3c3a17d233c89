"""Open a ``torch.export.save`` archive (``.pt2``) without unpickling anything from it.

Invariant: ``torch.export.load`` only ever reads, from the copy this module hands it, JSON and raw
tensor bytes: an archive holding a pickled payload (a weight or constant saved with ``use_pickle``, a
custom or opaque object, a legacy ``.pt`` weights file, an AOTInductor model) is refused with one
``ValueError`` naming it, and the pickled sample inputs are replaced by an empty entry, which torch
reads as none. See Note [No pickle in a loaded .pt2].
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from typing import Iterator

__all__ = ["archive_without_pickles"]

# Note [No pickle in a loaded .pt2]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch.export.load (torch/export/pt2_archive/_package.py load_pt2) unpickles three things: weights
# and constants whose payload config says ``use_pickle`` (torch.load with weights_only=False),
# custom and opaque objects (``_pickle_load_obj``, pickle.loads), and the sample inputs
# (torch/_export/serde/serialize.py deserialize_torch_artifact: ``weights_only=True``, then
# ``weights_only=False`` if that fails). dynascope never loads a pickle from a file, and needs
# none of these to show the program: its graph, signature and tensor metadata are JSON
# (``models/<name>.json``). So the archive's payload configs are read first (JSON, stdlib), any
# pickled payload is refused by name, and torch loads a copy whose sample inputs are empty (an empty
# artifact deserializes to ``{}`` without unpickling). Plain weights stay: torch rebuilds them from
# raw bytes, as the program's state dict needs them.


def _dirs() -> tuple[str, str, str, str, tuple[str, ...]]:
    from torch.export.pt2_archive import constants as c

    return (c.WEIGHTS_DIR, c.CONSTANTS_DIR, c.AOTINDUCTOR_DIR, os.path.dirname(c.SAMPLE_INPUTS_FILENAME_FORMAT) + "/",
            (c.WEIGHT_FILENAME_PREFIX, c.TENSOR_CONSTANT_FILENAME_PREFIX))


def _pickled(rel: str, data: bytes, plain: tuple[str, ...]) -> list[str]:
    """The payloads a weights/constants config says are pickled (or are not plain tensors)."""
    try:
        config = json.loads(data)["config"]
        return [f"{fqn} ({meta.get('path_name')})" for fqn, meta in config.items()
                if meta.get("use_pickle") or not str(meta.get("path_name", "")).startswith(plain)]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"its payload config {rel!r} is not what torch.export.save writes ({e})") from None


@contextlib.contextmanager
def archive_without_pickles(path: str) -> Iterator[str]:
    """A temporary copy of the archive at ``path`` that ``torch.export.load`` reads without unpickling;
    ``ValueError`` naming what is refused (Note [No pickle in a loaded .pt2])."""
    weights, constants, aoti, samples, plain = _dirs()
    try:
        src = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(f"not a torch.export archive: {path!r} ({e})") from None
    with src, tempfile.TemporaryDirectory(prefix="dynascope-pt2-") as tmp:
        out = os.path.join(tmp, os.path.basename(path))
        refused: list[str] = []
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                rel = info.filename.split("/", 1)[1] if "/" in info.filename else info.filename
                data = src.read(info)
                if rel.startswith(aoti):
                    refused.append(f"an AOTInductor model ({rel})")
                elif rel.startswith((weights, constants)) and rel.endswith(".pt"):
                    refused.append(f"a legacy pickled payload ({rel})")
                elif rel.startswith((weights, constants)) and rel.endswith(".json"):
                    refused.extend(f"pickled {p}" for p in _pickled(rel, data, plain))
                elif rel.startswith(samples):
                    data = b""  # Note [No pickle in a loaded .pt2]: torch reads an empty artifact as {}
                dst.writestr(info, data)
        if refused:
            raise ValueError(f"{path!r} holds payloads torch would unpickle, which dynascope never loads: "
                             + "; ".join(refused[:10]))
        yield out
