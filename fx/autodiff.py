"""The public differentiation API: ``jvp``, ``linearize``, ``vjp``, ``fwd_and_bwd``, ``grad``,
``value_and_grad``, ``jacfwd``, ``jacrev``, ``hessian``.

All accept and return pytrees. Reverse mode is linearize + transpose: the forward pass runs
(or is traced) once, tangent operations are staged into a linear jaxpr, and the pullback
transposes it, summing the cotangent contributions of every use of a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import dtypes, lax, tree_util
from fx.core import get_aval
from fx.interpreters import batching
from fx.interpreters.eval import eval_jaxpr
from fx.interpreters.jvp import Zero, instantiate, is_differentiable, jvp_flat
from fx.interpreters.partial_eval import linearize_flat
from fx.interpreters.transpose import UndefinedPrimal, backward_pass
from fx.lax.parallel import checked_scale_p, checked_sum_p
from fx.numpy._promote import to_array
from fx.vectorize import vmap


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _as_values(leaves, what: str):
    out = []
    for i, x in enumerate(leaves):
        try:
            out.append(to_array(x))
        except TypeError:
            raise TypeError(
                f"{what}: leaf {i} has type {type(x).__name__}, which is not an array type"
            ) from None
    return out


def _check_tangents(primals, tangents, what: str):
    for i, (p, t) in enumerate(zip(primals, tangents)):
        pa, ta = get_aval(p), get_aval(t)
        if pa.shape != ta.shape or (pa.dtype != ta.dtype and is_differentiable(pa)):
            # jax's types: ValueError for the shapes, TypeError for the dtypes.
            raise (ValueError if pa.shape != ta.shape else TypeError)(
                f"{what}: primal and tangent {i} must have equal shapes and dtypes, got "
                f"{pa.str_short()} and {ta.str_short()}"
            )


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False):
    """Forward-mode Jacobian-vector product: ``(fun(*primals), J·tangents)``.

    Example::

        >>> y, y_dot = fx.jvp(fnp.sin, (0.5,), (1.0,))   # y_dot == cos(0.5)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"jvp: primals {p_tree} and tangents {t_tree} differ in structure; "
                        "pass tangents of the primals' structure")
    p_leaves = _as_values(p_leaves, "jvp")
    t_leaves = _as_values(t_leaves, "jvp")
    _check_tangents(p_leaves, t_leaves, "jvp")
    flat, store = _flat_with_aux(fun, p_tree, has_aux)
    outs, touts = jvp_flat(flat, p_leaves, t_leaves, "jvp")
    outs, touts = _split_aux(store, outs), touts[:store["n_out"]]
    touts = [instantiate(t) for t in touts]
    out_tree = store["tree"]
    out = tree_util.tree_unflatten(out_tree, outs)
    tout = tree_util.tree_unflatten(out_tree, touts)
    if has_aux:
        return out, tout, store["aux"]
    return out, tout


def _flat_with_aux(fun, in_tree, has_aux: bool):
    """A function of the flattened arguments returning the flattened outputs followed by the
    flattened aux value (with ``has_aux``), so that aux values leave the transformation as
    plain values like the outputs do; structures and counts are left in the returned store."""
    store: dict[str, Any] = {"aux_tree": None}

    def flat_f(*leaves):
        out = fun(*tree_util.tree_unflatten(in_tree, leaves))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                got = type(out).__name__ + (f" of length {len(out)}"
                                             if isinstance(out, tuple) else "")
                raise TypeError(
                    f"{_fun_name(fun)} was used with has_aux=True, so it must return a pair "
                    f"(output, aux); it returned a {got}"
                )
            out, aux = out
            aux_leaves, store["aux_tree"] = tree_util.tree_flatten(aux)
        out_leaves, store["tree"] = tree_util.tree_flatten(out)
        store["n_out"] = len(out_leaves)
        return _as_values(out_leaves, f"output of {_fun_name(fun)}") + _as_values(
            aux_leaves, f"aux output of {_fun_name(fun)}")

    return flat_f, store


def _split_aux(store, outs: list) -> list:
    """The outputs proper; the aux value (rebuilt from the remaining leaves) goes to store."""
    n = store["n_out"]
    if store["aux_tree"] is not None:
        store["aux"] = tree_util.tree_unflatten(store["aux_tree"], outs[n:])
    return outs[:n]


def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the Jacobian at
    ``primals`` applied to ``tangents`` without re-running the forward pass.

    As jax's, ``f_jvp`` is a ``fx.tree_util.Partial`` whose leaves are the saved residuals,
    so ``jit`` can return it."""
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    p_leaves = _as_values(p_leaves, "linearize")
    flat, store = _flat_with_aux(fun, p_tree, False)
    diff = [is_differentiable(get_aval(p)) for p in p_leaves]
    outs, linear = linearize_flat(flat, p_leaves, diff)
    outs = _split_aux(store, outs)
    out_tree = store["tree"]
    spec = _Pushforward(linear.jaxpr, p_tree, out_tree, tuple(diff),
                        tuple(get_aval(p) for p in p_leaves))
    return tree_util.tree_unflatten(out_tree, outs), tree_util.Partial(spec, list(linear.consts))


class _Pushforward:
    """A linearized function but its residuals: the linear jaxpr and the structures and types
    of its inputs and outputs (compared by identity, as aux data of a pytree node)."""

    __slots__ = ("jaxpr", "p_tree", "out_tree", "diff", "p_avals")

    def __init__(self, jaxpr, p_tree, out_tree, diff, p_avals):
        self.jaxpr, self.p_tree, self.out_tree = jaxpr, p_tree, out_tree
        self.diff, self.p_avals = diff, p_avals

    def __call__(self, residuals: list, *tangents):
        t_leaves, t_tree = tree_util.tree_flatten(tangents)
        if t_tree != self.p_tree:
            raise ValueError(f"linearize: tangents {t_tree} must match primals {self.p_tree}")
        t_leaves = _as_values(t_leaves, "linearize")
        for i, (pa, t) in enumerate(zip(self.p_avals, t_leaves)):
            ta = get_aval(t)
            if pa.shape != ta.shape or (pa.dtype != ta.dtype and is_differentiable(pa)):
                raise ValueError(
                    f"linearize: primal and tangent {i} must have equal shapes and dtypes, got "
                    f"{pa.str_short()} and {ta.str_short()}"
                )
        ins = [t for t, d in zip(t_leaves, self.diff) if d]
        return tree_util.tree_unflatten(self.out_tree,
                                        eval_jaxpr(self.jaxpr, residuals, *ins))


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(ct)`` returns the cotangents of the primals
    (a tuple, one per argument) given a cotangent ``ct`` shaped like the output.

    ``vjp_fn`` is a ``fx.tree_util.Partial`` whose leaves are the residuals of the forward
    pass, so ``jit`` can return it and take it as an argument::

        >>> y, f_vjp = fx.jit(lambda x: fx.vjp(fnp.sin, x))(1.0)
        >>> f_vjp(1.0)          # (cos(1.0),)
    """
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    p_leaves = _as_values(p_leaves, "vjp")
    flat, store = _flat_with_aux(fun, p_tree, has_aux)
    diff = [is_differentiable(get_aval(p)) for p in p_leaves]
    outs, linear = linearize_flat(flat, p_leaves, diff)
    outs = _split_aux(store, outs)
    out_tree = store["tree"]
    # Inside a shard_map with check_vma, the cotangents are jax's typed ones: the primal
    # inputs and outputs go with the residuals as witnesses of their types (see _Pullback).
    checked = batching.checked_axes()
    witnesses = ([p for p, d in zip(p_leaves, diff) if d] + list(outs)) if checked else []
    spec = _Pullback(linear.jaxpr, _fun_name(fun), p_tree, out_tree, tuple(diff),
                     tuple(get_aval(p) for p in p_leaves), tuple(get_aval(o) for o in outs),
                     store["n_out"], checked)
    # As jax's, the vjp function is a Partial: its residuals are pytree leaves, so it can be
    # returned from or passed into jit and vmap.
    vjp_fn = tree_util.Partial(spec, list(linear.consts) + witnesses)
    out = tree_util.tree_unflatten(out_tree, outs)
    if has_aux:
        return out, vjp_fn, store["aux"]
    return out, vjp_fn


class _Pullback:
    """Everything about a vjp function but its residuals: the linear jaxpr to transpose and
    the structures and types of the primal inputs and outputs (compared by identity, as the
    aux data of a pytree node)."""

    __slots__ = ("jaxpr", "name", "p_tree", "out_tree", "diff", "p_avals", "out_avals", "n_out",
                 "checked")

    def __init__(self, jaxpr, name, p_tree, out_tree, diff, p_avals, out_avals, n_out,
                 checked=()):
        self.jaxpr, self.name, self.p_tree, self.out_tree = jaxpr, name, p_tree, out_tree
        self.diff, self.p_avals, self.out_avals, self.n_out = diff, p_avals, out_avals, n_out
        # The checked mesh axes bound when the vjp was taken; with them, the residuals end
        # with the differentiated primal inputs and the outputs.
        self.checked = checked

    def __call__(self, residuals: list, ct):
        if self.checked:
            n_in = sum(self.diff)
            k = len(residuals) - n_in - len(self.out_avals)
            residuals, p_refs, out_refs = (residuals[:k], residuals[k:k + n_in],
                                           residuals[k + n_in:])
        ct_leaves, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != self.out_tree:
            raise ValueError(
                f"vjp: the cotangent has structure {ct_tree}, but the output of "
                f"{self.name} has structure {self.out_tree}"
            )
        ct_leaves = _as_values(ct_leaves, "vjp")
        for i, (c, a) in enumerate(zip(ct_leaves, self.out_avals)):
            ca = get_aval(c)
            if ca.shape != a.shape:
                raise ValueError(
                    f"vjp: cotangent {i} has shape {ca.shape}, expected {a.shape} "
                    f"(the output's shape)"
                )
            if ca.dtype != a.dtype and is_differentiable(a):
                ct_leaves[i] = lax.convert_element_type(c, a.dtype)
            if self.checked and is_differentiable(a):
                # An output that does not vary over a checked axis counts once, not once
                # per lane: jax's vjp of the lanes' function with these cotangents.
                ct_leaves[i] = checked_scale_p.bind(ct_leaves[i], out_refs[i],
                                                    axes=self.checked)
        aux_zeros = [Zero(v.aval) for v in self.jaxpr.outvars[self.n_out:]]
        undefined = [UndefinedPrimal(v.aval) for v in self.jaxpr.invars]
        cts = backward_pass(self.jaxpr, residuals, undefined, ct_leaves + aux_zeros)
        if self.checked:
            # An input that does not vary over a checked axis is one value feeding every
            # lane: its cotangent is the sum of the lanes'.
            cts = [c if isinstance(c, Zero) else
                   checked_sum_p.bind(instantiate(c), ref, axes=self.checked)
                   for c, ref in zip(cts, p_refs)]
        it = iter(cts)
        flat_cts = [instantiate(next(it)) if d else instantiate(Zero(a))
                    for a, d in zip(self.p_avals, self.diff)]
        return tree_util.tree_unflatten(self.p_tree, flat_cts)



def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """The forward and backward passes of ``fun`` as two functions (as ``jax.fwd_and_bwd``).

    ``fwd(*args)`` is ``fx.vjp`` of ``fun`` in the arguments ``argnums``: it returns
    ``(fun(*args), residuals)``, or ``(fun(*args), residuals, aux)`` with ``has_aux``.
    ``bwd(residuals, ct)`` returns the cotangents of those arguments given a cotangent
    ``ct`` shaped like the output: one value for an int ``argnums``, a tuple for a sequence.
    With ``jitted`` (the default) both are ``fx.jit`` functions, so a training loop compiles
    each once; the residuals are a pytree that goes from one to the other.

    Example::

        >>> fwd, bwd = fx.fwd_and_bwd(lambda x, w: fnp.sin(x) * w, argnums=(0, 1))
        >>> y, res = fwd(fnp.zeros(2), fnp.array([3.0, 3.0]))
        >>> bwd(res, fnp.ones(2))
        (Array([3., 3.], dtype=float32), Array([0., 0.], dtype=float32))
    """
    if not callable(fun):
        raise TypeError(f"fwd_and_bwd: expected a callable, got {type(fun).__name__}")
    if not isinstance(argnums, int) and not all(isinstance(a, int) for a in argnums):
        raise TypeError(f"fwd_and_bwd: argnums must be an int or a sequence of ints, got "
                        f"{argnums!r}")

    def fwd(*args):
        nums = _argnums_tuple(argnums, len(args), "fwd_and_bwd")

        def partial_f(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full)

        partial_f.__name__ = _fun_name(fun)
        return vjp(partial_f, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(residuals, ct):
        g = residuals(ct)
        return g[0] if isinstance(argnums, int) else g

    fwd.__name__, bwd.__name__ = f"fwd({_fun_name(fun)})", f"bwd({_fun_name(fun)})"
    if jitted:
        # jit's compiler needs fx.scipy.special, which differentiates with this module
        from fx.jit_function import jit

        return jit(fwd), jit(bwd)
    return fwd, bwd


def _argnums_tuple(argnums, nargs: int, what: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise ValueError(
                f"{what}: argnums {argnums!r} is out of range for a function called with "
                f"{nargs} positional argument{'s' if nargs != 1 else ''}"
            )
    return tuple(a % nargs for a in nums)


def _input_dtypes(what: str, fun, nums, diff_args, *, holomorphic: bool,
                  complex_ok: bool) -> None:
    """jax's checks of the differentiated inputs: complex with ``holomorphic``; otherwise
    real floating (or complex too, for reverse mode with ``complex_ok``)."""
    for i, a in zip(nums, diff_args):
        for leaf in tree_util.tree_leaves(a):
            dt = get_aval(to_array(leaf)).dtype
            if holomorphic:
                if not dtypes.is_complex(dt):
                    raise TypeError(
                        f"{what} with holomorphic=True requires inputs with complex dtype, "
                        f"but argument {i} of {_fun_name(fun)} has dtype {dt}")
            elif not (dtypes.is_float(dt) or (complex_ok and dtypes.is_complex(dt))):
                kinds = "floating-point or complex" if complex_ok else "real floating-point"
                raise TypeError(
                    f"{what} requires {kinds} inputs, but argument {i} of {_fun_name(fun)} "
                    f"has dtype {dt}. Convert it with .astype(float32), or leave it out of "
                    "argnums" + ("" if complex_ok else
                                 "; for a holomorphic function pass holomorphic=True, for a "
                                 "non-holomorphic one of complex inputs use fx.jvp") + ".")


def _output_dtype(what: str, fun, aval, *, holomorphic: bool) -> None:
    if holomorphic:
        if not dtypes.is_complex(aval.dtype):
            raise TypeError(
                f"{what} with holomorphic=True requires outputs with complex dtype, but "
                f"{_fun_name(fun)} returned {aval.str_short()}")
    elif not dtypes.is_float(aval.dtype):
        hint = ("For holomorphic differentiation, pass holomorphic=True; for a non-holomorphic "
                "function with complex outputs use fx.vjp directly."
                if dtypes.is_complex(aval.dtype) else "Use fx.vjp for integer outputs.")
        raise TypeError(
            f"{what} requires real-valued floating-point outputs, but {_fun_name(fun)} "
            f"returned {aval.str_short()}. {hint}")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False):
    """A function returning ``(fun(*args), gradient)``; see :func:`grad`."""

    def value_and_grad_f(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad")
        diff_args = [args[i] for i in nums]
        _input_dtypes("grad", fun, nums, diff_args, holomorphic=holomorphic, complex_ok=True)

        def partial_f(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full, **kwargs)

        partial_f.__name__ = _fun_name(fun)
        res = vjp(partial_f, *diff_args, has_aux=has_aux)
        out, pullback = res[0], res[1]
        out_leaves = tree_util.tree_leaves(out)
        out_aval = get_aval(out_leaves[0]) if len(out_leaves) == 1 else None
        is_leaf = tree_util.treedef_is_leaf(tree_util.tree_structure(out))
        if out_aval is None or out_aval.shape != () or not is_leaf:
            what = out_aval.str_short() if out_aval is not None else f"a {type(out).__name__}"
            raise TypeError(
                f"grad requires a scalar output, but {_fun_name(fun)} returned {what}. Use "
                "fx.vjp or fx.jacrev for non-scalar outputs (or reduce it with .sum())."
            )
        _output_dtype("grad", fun, out_aval, holomorphic=holomorphic)
        g = pullback(lax.full((), 1, out_aval.dtype))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        if has_aux:
            return (out, res[2]), g
        return out, g

    value_and_grad_f.__name__ = f"value_and_grad({_fun_name(fun)})"
    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False):
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums``.

    As jax's: for a real-valued ``fun`` of complex ``z = x + iy`` it is ``df/dx - i df/dy``;
    with ``holomorphic=True`` (complex inputs and output) it is the complex derivative.

    Example::

        >>> df = fx.grad(lambda x: (x ** 2).sum())
        >>> df(fnp.array([1.0, 2.0]))
        Array([2., 4.], dtype=float32)
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic)

    def grad_f(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    grad_f.__name__ = f"grad({_fun_name(fun)})"
    return grad_f


# --- Jacobians ----------------------------------------------------------------------------------


def _std_basis(leaves):
    """An identity matrix reshaped to ``(n, *leaf_shapes)`` pieces, one per leaf."""
    sizes = [get_aval(x).size for x in leaves]
    total = sum(sizes)
    dt = dtypes.join(*((get_aval(x).dtype, False) for x in leaves))[0]
    eye = np.eye(total, dtype=dt)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        block = eye[:, start : start + n].reshape((total,) + get_aval(x).shape)
        out.append(to_array(block.astype(get_aval(x).dtype)))
        start += n
    return out, total


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by forward mode (one vmapped jvp over a basis of inputs).

    The result for an output of shape ``O`` and an input of shape ``I`` has shape ``O + I``.
    """
    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        diff_args = tuple(args[i] for i in nums)
        _input_dtypes("jacfwd", fun, nums, diff_args, holomorphic=holomorphic,
                      complex_ok=False)
        leaves, tree = tree_util.tree_flatten(diff_args)
        leaves = _as_values(leaves, "jacfwd")
        basis, n = _std_basis(leaves)

        def partial_f(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full, **kwargs)

        def push(*t_leaves):
            tangents = tree_util.tree_unflatten(tree, t_leaves)
            res = jvp(partial_f, tree_util.tree_unflatten(tree, leaves), tangents,
                      has_aux=has_aux)
            return (res[1], res[2]) if has_aux else res[1]

        # The aux value does not depend on the tangent: it comes out unbatched.
        res = vmap(push, out_axes=(-1, None) if has_aux else -1)(*basis)
        touts = res[0] if has_aux else res
        y_leaves = tree_util.tree_leaves(touts)
        if holomorphic:
            for y in y_leaves:
                _output_dtype("jacfwd", fun, get_aval(y), holomorphic=True)
        jac_leaves = [_split_last(t, leaves) for t in y_leaves]
        out_tree = tree_util.tree_structure(touts)
        jac_tree = _assemble(out_tree, jac_leaves, tree, argnums)
        if has_aux:
            aux = tree_util.tree_map(lambda a: a, res[1])
            return jac_tree, aux
        return jac_tree

    return jac


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False):
    """The Jacobian of ``fun`` by reverse mode (one vmapped vjp over a basis of outputs)."""
    def jac(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        diff_args = tuple(args[i] for i in nums)
        _input_dtypes("jacrev", fun, nums, diff_args, holomorphic=holomorphic,
                      complex_ok=True)

        def partial_f(*diff):
            full = list(args)
            for i, d in zip(nums, diff):
                full[i] = d
            return fun(*full, **kwargs)

        partial_f.__name__ = _fun_name(fun)
        res = vjp(partial_f, *diff_args, has_aux=has_aux)
        out, pullback = res[0], res[1]
        out_leaves, out_tree = tree_util.tree_flatten(out)
        for o in out_leaves:
            _output_dtype("jacrev", fun, get_aval(o), holomorphic=holomorphic)
        basis, n = _std_basis(out_leaves)
        cts = vmap(lambda *b: pullback(tree_util.tree_unflatten(out_tree, b)))(*basis)
        in_leaves, in_tree = tree_util.tree_flatten(diff_args)
        ct_leaves = tree_util.tree_leaves(cts)
        # ct_leaves[j] has shape (n_out, *in_shape_j): split n_out per output leaf.
        per_out = []
        start = 0
        for o in out_leaves:
            size, shape = get_aval(o).size, get_aval(o).shape
            row = []
            for c in ct_leaves:
                piece = lax.slice_in_dim(c, start, start + size, 1, 0)
                row.append(lax.reshape(piece, shape + get_aval(c).shape[1:]))
            per_out.append(row)
            start += size
        jac_tree = _assemble(out_tree, per_out, in_tree, argnums)
        if has_aux:
            return jac_tree, res[2]
        return jac_tree

    return jac


def _split_last(t, in_leaves):
    """Split the trailing basis axis of ``t`` (shape ``O + (n,)``) into one block per input
    leaf, each reshaped to ``O + in_shape``."""
    shape = get_aval(t).shape[:-1]
    out, start = [], 0
    for x in in_leaves:
        size = get_aval(x).size
        piece = lax.slice_in_dim(t, start, start + size, 1, len(shape))
        out.append(lax.reshape(piece, shape + get_aval(x).shape))
        start += size
    return out


def _assemble(out_tree, blocks, in_tree, argnums):
    """The Jacobian pytree: output structure outside, input structure (per argnums) inside."""
    rows = []
    for row in blocks:
        inner = tree_util.tree_unflatten(in_tree, row)
        rows.append(inner[0] if isinstance(argnums, int) else inner)
    return tree_util.tree_unflatten(out_tree, rows)


jacobian = jacrev  # jax's name: reverse mode


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear function ``fun`` at the types of ``primals`` (only their
    shapes and dtypes are used): ``fun_t(ct)`` returns one cotangent per primal, a tuple, as
    ``jax.linear_transpose``.

    Example::

        >>> f_t = fx.linear_transpose(lambda x: 2.0 * x.sum(), fnp.zeros(3))
        >>> f_t(1.0)
        (Array([2., 2., 2.], dtype=float32),)
    """
    from fx.tracing import abstractify, flatten_fun, trace_to_jaxpr

    name = _fun_name(fun)
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    in_avals = [abstractify(x) for x in p_leaves]
    for i, a in enumerate(in_avals):
        if not dtypes.is_float(a.dtype):
            raise TypeError(
                f"linear_transpose of {name}: primal leaf {i} is {a.str_short()}; a linear "
                "function's inputs must be floating-point"
            )
    flat, store = flatten_fun(lambda *a: fun(*a), tree_util.tree_structure((primals, {})),
                              name)
    closed = trace_to_jaxpr(flat, in_avals, (), f"linear_transpose({name})")
    out_tree = store["tree"]
    out_avals = closed.out_avals

    def transposed(ct):
        ct_leaves, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(
                f"linear_transpose of {name}: the cotangent has structure {ct_tree}, but the "
                f"function's output has structure {out_tree}"
            )
        ct_leaves = _as_values(ct_leaves, "linear_transpose")
        for i, (c, a) in enumerate(zip(ct_leaves, out_avals)):
            ca = get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(
                    f"linear_transpose of {name}: cotangent {i} is {ca.str_short()}, but the "
                    f"output is {a.str_short()}; they must have equal shapes and dtypes"
                )
        undefined = [UndefinedPrimal(a) for a in in_avals]
        try:
            cts = backward_pass(closed.jaxpr, closed.consts, undefined, ct_leaves)
        except NotImplementedError as e:
            e.add_note(f"(linear_transpose of {name}: is the function linear in its inputs?)")
            raise
        return tuple(tree_util.tree_unflatten(p_tree, [instantiate(c) for c in cts]))

    return transposed


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False):
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def stop_gradient(x):
    """The identity on a pytree, with a zero derivative: gradients do not flow through.
    Integer and bool leaves pass unchanged."""
    def leaf(v):
        v = to_array(v)
        return lax.stop_gradient(v) if dtypes.is_inexact(get_aval(v).dtype) else v

    return tree_util.tree_map(leaf, x)
