"""Exporting fx functions for deployment: ``to_onnx`` / ``save_onnx`` (needs the ``export``
extra: ``pip install fx[export]``, which brings ``onnx`` and ``onnxruntime``).

``export(fx.jit(f))(*args)`` lowers a jitted function for these argument types into an
``Exported`` that serializes to bytes (``.serialize()``, ``deserialize(blob)``) and runs in a
fresh process without the user's code (``fx.export.serialization``).

``freeze(apply_fn, params)`` is the model as an inference-time function of its inputs, the
parameters constants and the inference passes applied (``fx.export.freeze``).

``to_onnx(fn, *example_args)`` traces ``fn`` into a jaxpr and translates it, one rule per
primitive (``fx.export.onnx_graph.onnx_rules``), into an ``onnx.ModelProto``; primitives with
no translation are listed with their reasons in ``fx.export.onnx_unsupported.NOT_EXPORTABLE``.
"""

from fx.export.errors import ExportError
from fx.export.freeze import Frozen, freeze
from fx.export.onnx_export import register, save_onnx, to_onnx
from fx.export.serialization import DeserializationError, Exported, deserialize, export

__all__ = ["DeserializationError", "ExportError", "Exported", "Frozen", "deserialize", "export",
           "freeze", "register", "save_onnx", "to_onnx"]
