"""Exporting fx functions for deployment: ``to_onnx`` / ``save_onnx`` (needs the ``export``
extra: ``pip install fx[export]``, which brings ``onnx`` and ``onnxruntime``).

``to_onnx(fn, *example_args)`` traces ``fn`` into a jaxpr and translates it, one rule per
primitive (``fx.export.onnx_export.onnx_rules``), into an ``onnx.ModelProto``; primitives with
no translation are listed with their reasons in ``fx.export.onnx_unsupported.NOT_EXPORTABLE``.
"""

from fx.export.errors import ExportError
from fx.export.onnx_export import register, save_onnx, to_onnx

__all__ = ["ExportError", "register", "save_onnx", "to_onnx"]
