"""Errors of fx.export: what cannot be exported, named by the equation and its source line."""

from __future__ import annotations

from fx.jaxpr import JaxprEqn


class ExportError(NotImplementedError):
    """The function cannot be exported to ONNX as asked (an unsupported primitive, or a
    batch-dependent shape under ``dynamic_batch=True``). ``located`` errors already name the
    equation and its source line."""

    located = False


def describe_eqn(eqn: JaxprEqn) -> str:
    shapes = ", ".join(v.aval.str_short() for v in eqn.invars) or "no operands"
    where = f" at {eqn.source_info}" if eqn.source_info is not None else ""
    return f"'{eqn.primitive.name}' (operands {shapes}){where}"


def unsupported(eqn: JaxprEqn, message: str) -> ExportError:
    e = ExportError(f"fx.export.to_onnx: cannot export {describe_eqn(eqn)}: {message}")
    e.located = True
    return e
