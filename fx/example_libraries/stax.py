"""Stax: neural-network layers as pairs of pure functions, after ``jax.example_libraries.stax``.

A layer is ``(init_fun, apply_fun)``:

- ``init_fun(rng, input_shape) -> (output_shape, params)``: ``rng`` is an ``fx.random`` key,
  shapes are tuples of ints (``-1`` may stand for a batch size that is not known yet), and
  ``params`` is a pytree of fx arrays (tuples and lists, exactly the structure jax's stax
  builds, so parameters convert leaf by leaf between the two);
- ``apply_fun(params, inputs, **kwargs) -> outputs``: pure, so it composes with ``fx.grad``,
  ``fx.vmap`` and ``fx.jit``. Layers that need randomness (:func:`Dropout`) take ``rng=``.

Constructors (``Dense(10)``, ``Conv(8, (3, 3))``, ``MaxPool((2, 2))``, ``Dropout(0.9)``,
``FanOut(2)``, ``FanInConcat()``) return layers; ``Relu``, ``Tanh``, ``Flatten``,
``Identity``, ``FanInSum``... *are* layers. Combinators :func:`serial` and :func:`parallel`
build networks from layers. :func:`GeneralConvTranspose` (``ConvTranspose``,
``Conv1DTranspose``) upsamples; the lowercase names (``relu``, ``logsoftmax``, ``glorot``,
``randn`` ...) are the functions and initializers jax's stax module exports under them.

Layouts: :func:`Conv` and the pooling layers default to channels-last, ``NHWC`` inputs with
``HWIO`` kernels (as in jax's stax). For channels-first use
``GeneralConv(('NCHW', 'OIHW', 'NCHW'), ...)`` and ``MaxPool(..., spec='NCHW')``.

Initializers draw with ``fx.random`` and the same arithmetic as ``jax.nn.initializers``, so a
network initialised from the same key holds the same numbers as its jax twin (bit for bit for
uniform draws, to a few ulps for normal ones, whose transcendental functions are computed by
different libraries).

>>> import fx, fx.random
>>> from fx.example_libraries import stax
>>> init, apply = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(10), stax.LogSoftmax)
>>> out_shape, params = init(fx.random.key(0), (-1, 64))
>>> out_shape
(-1, 10)
>>> apply(params, fx.numpy.ones((5, 64))).shape
(5, 10)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import fx.numpy as fnp
import fx.random as random
from fx import dtypes, lax, nn

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "elu", "gelu", "glorot",
    "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "leaky_relu", "lecun_normal",
    "lecun_uniform", "log_softmax", "logsoftmax", "normal", "ones", "parallel", "randn", "relu",
    "selu", "serial", "shape_dependent", "sigmoid", "softmax", "softplus", "standardize",
    "uniform", "variance_scaling", "zeros",
]

Initializer = Callable[..., object]
Layer = tuple[Callable, Callable]

# --- initializers (jax.nn.initializers' formulas and argument order) -------------------------


def zeros(key, shape, dtype=dtypes.float32):
    """All zeros (``key`` is ignored)."""
    return fnp.zeros(tuple(shape), dtype)


def ones(key, shape, dtype=dtypes.float32):
    """All ones (``key`` is ignored)."""
    return fnp.ones(tuple(shape), dtype)


def normal(stddev: float = 1e-2, dtype=dtypes.float32) -> Initializer:
    """Normal draws with standard deviation ``stddev``."""

    def init(key, shape, dtype=dtype):
        return random.normal(key, tuple(shape), dtype) * fnp.asarray(stddev, dtype)

    return init


def uniform(scale: float = 1e-2, dtype=dtypes.float32) -> Initializer:
    """Uniform draws in ``[0, scale)``."""

    def init(key, shape, dtype=dtype):
        return random.uniform(key, tuple(shape), dtype) * fnp.asarray(scale, dtype)

    return init


def _fans(name: str, shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"{name}: a {len(shape)}-d weight shape {tuple(shape)} has no input "
                         "and output axes; give in_axis/out_axis explicitly")

    def size(axes):
        return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)

    in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
    # Same float operations in the same order as jax, so the variances agree to the bit.
    receptive = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive, out_size * receptive


# Standard deviation of a standard normal truncated to (-2, 2).
_TRUNCATED_STDDEV = 0.87962566103423978


def variance_scaling(scale: float, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=dtypes.float32) -> Initializer:
    """Draws with variance ``scale / n``, ``n`` the fan-in, fan-out or their (arithmetic or
    geometric) average, from a ``"truncated_normal"`` (cut at two standard deviations),
    ``"normal"`` or ``"uniform"`` distribution. Axes other than ``in_axis``/``out_axis``/
    ``batch_axis`` count as the receptive field (convolution taps)."""
    modes = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
    if mode not in modes:
        raise ValueError(f"variance_scaling: mode {mode!r} is not one of {modes}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: distribution {distribution!r} is not one of "
                         "'truncated_normal', 'normal', 'uniform'")

    def init(key, shape, dtype=dtype):
        shape = tuple(int(d) for d in shape)
        dtype = dtypes.canonicalize(dtype)
        fan_in, fan_out = _fans("variance_scaling", shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = fnp.asarray(scale / denominator, dtype)
        if distribution == "truncated_normal":
            stddev = fnp.sqrt(variance) / fnp.asarray(_TRUNCATED_STDDEV, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * fnp.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * fnp.sqrt(3 * variance)

    return init


def _scaling(scale: float, mode: str, distribution: str, doc: str):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=dtypes.float32) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    make.__doc__ = doc
    return make


glorot_normal = _scaling(1.0, "fan_avg", "truncated_normal",
                         "Glorot/Xavier: truncated normal with variance 2 / (fan_in + fan_out).")
glorot_uniform = _scaling(1.0, "fan_avg", "uniform",
                          "Glorot/Xavier: uniform with variance 2 / (fan_in + fan_out).")
he_normal = _scaling(2.0, "fan_in", "truncated_normal",
                     "He/Kaiming: truncated normal with variance 2 / fan_in.")
he_uniform = _scaling(2.0, "fan_in", "uniform", "He/Kaiming: uniform with variance 2 / fan_in.")
lecun_normal = _scaling(1.0, "fan_in", "truncated_normal",
                        "LeCun: truncated normal with variance 1 / fan_in.")
lecun_uniform = _scaling(1.0, "fan_in", "uniform", "LeCun: uniform with variance 1 / fan_in.")

# --- layers ----------------------------------------------------------------------------------


_GLOROT_NORMAL, _NORMAL, _NORMAL_TINY = glorot_normal(), normal(), normal(1e-6)


def Dense(out_dim: int, W_init: Initializer = _GLOROT_NORMAL,  # noqa: N802, N803
          b_init: Initializer = _NORMAL) -> Layer:
    """Fully connected: ``inputs @ W + b`` with ``W`` of shape ``(in, out_dim)``."""

    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))  # noqa: N806
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return fnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _window_out(size: int, window: int, stride: int, padding) -> int:
    if size < 0:  # unknown batch size
        return size
    if isinstance(padding, str):
        if padding.upper() == "SAME":
            return -(-size // stride)
        if padding.upper() == "VALID":
            return max(-(-(size - window + 1) // stride), 0)
        raise ValueError(f"stax: padding {padding!r} is not 'SAME', 'VALID' or (low, high) pairs")
    lo, hi = padding
    return max((size + lo + hi - window) // stride + 1, 0)


def _pads(padding, n: int) -> list:
    return [padding] * n if isinstance(padding, str) else list(padding)


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,  # noqa: N802
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding="VALID", W_init: Initializer | None = None,  # noqa: N803
                b_init: Initializer = _NORMAL_TINY) -> Layer:
    """Convolution with layouts named by ``dimension_numbers = (lhs, kernel, out)`` specs such
    as ``('NCHW', 'OIHW', 'NCHW')``; ``filter_shape`` lists the kernel's spatial sizes in the
    kernel spec's order. The bias has ``out_chan`` entries broadcast over the other axes."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806
    spatial = [c for c in rhs_spec if c not in "IO"]
    if len(spatial) != len(filter_shape):
        raise ValueError(f"GeneralConv: filter_shape {tuple(filter_shape)} needs one size per "
                         f"spatial dimension of the kernel spec {rhs_spec!r}")

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(sizes) for c in rhs_spec]
        out_shape = [0] * len(out_spec)
        out_shape[out_spec.index("N")] = input_shape[lhs_spec.index("N")]
        out_shape[out_spec.index("C")] = out_chan
        for s, k, st, pad in zip(spatial, filter_shape, strides, _pads(padding, len(spatial))):
            out_shape[out_spec.index(s)] = _window_out(input_shape[lhs_spec.index(s)], k, st,
                                                       pad)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)  # noqa: N806
        return tuple(out_shape), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = "Channels-last 2-d convolution: ``NHWC`` inputs, ``HWIO`` kernels."


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,  # noqa: N802
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding="VALID", W_init: Initializer | None = None,  # noqa: N803
                         b_init: Initializer = _NORMAL_TINY) -> Layer:
    """Transposed (fractionally strided) convolution, :func:`fx.lax.conv_transpose`, with the
    layouts, kernel and bias of :func:`GeneralConv`; ``padding`` names the forward
    convolution's (``'SAME'`` with stride 2 doubles the spatial sizes)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = tuple(strides or (1,) * len(filter_shape))
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))  # noqa: N806
    if len(filter_shape) != len(rhs_spec) - 2:
        raise ValueError(f"GeneralConvTranspose: filter_shape {tuple(filter_shape)} needs one "
                         f"size per spatial dimension of the kernel spec {rhs_spec!r}")

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(sizes) for c in rhs_spec]
        out_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides, padding,
                                                   dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)  # noqa: N806
        return tuple(out_shape), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return lax.conv_transpose(inputs, W, strides, padding,
                                  dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
Conv1DTranspose.__doc__ = "Channels-last 1-d transposed convolution: ``NHC`` inputs."
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
ConvTranspose.__doc__ = "Channels-last 2-d transposed convolution: ``NHWC`` inputs."


def BatchNorm(axis=(0, 1, 2), epsilon: float = 1e-5, center: bool = True,  # noqa: N802
              scale: bool = True, beta_init: Initializer = zeros,
              gamma_init: Initializer = ones) -> Layer:
    """Normalise over ``axis`` (by default batch and spatial axes of NHWC) with the statistics
    of the current batch, then scale by ``gamma`` and shift by ``beta`` (per remaining index).

    As in jax's stax this keeps no running averages: the same batch statistics are used at
    training and at evaluation time.
    """
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng, input_shape):
        ax = tuple(a % len(input_shape) for a in axis)
        shape = tuple(d for i, d in enumerate(input_shape) if i not in ax)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ax = tuple(a % x.ndim for a in axis)
        keep = tuple(1 if i in ax else d for i, d in enumerate(x.shape))
        z = nn.standardize(x, ax, epsilon=epsilon)
        if scale:
            z = fnp.reshape(gamma, keep) * z
        if center:
            z = z + fnp.reshape(beta, keep)
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs) -> Layer:
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    init_fun = lambda rng, input_shape: (input_shape, ())
    apply_fun = lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(fnp.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(fnp.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Gelu = elementwise(nn.gelu)
Selu = elementwise(nn.selu)

# The lowercase names jax's stax module exports: the activation functions its layers apply and
# two initializers under their old names.
elu, gelu, leaky_relu, relu, selu = nn.elu, nn.gelu, nn.leaky_relu, nn.relu, nn.selu
log_softmax = logsoftmax = nn.log_softmax
sigmoid, softmax, softplus, standardize = nn.sigmoid, nn.softmax, nn.softplus, nn.standardize
glorot, randn = glorot_normal, normal
jnp = fnp


def _pooling(kind: str):
    def layer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
              padding="VALID", spec: str | None = None) -> Layer:
        nsp = len(window_shape)
        strides = tuple(strides or (1,) * nsp)
        n_axis, c_axis = (0, nsp + 1) if spec is None else (spec.index("N"), spec.index("C"))
        window, steps = list(window_shape), list(strides)
        for i in sorted((n_axis, c_axis)):
            window.insert(i, 1)
            steps.insert(i, 1)
        pads = _pads(padding, nsp)
        full_pads = list(pads)
        if not isinstance(padding, str):
            for i in sorted((n_axis, c_axis)):
                full_pads.insert(i, (0, 0))
        reducer = lax.max if kind == "max" else lax.add

        def init_fun(rng, input_shape):
            if len(input_shape) != nsp + 2:
                raise ValueError(f"{kind.capitalize()}Pool: a {nsp}-d window needs inputs of "
                                 f"rank {nsp + 2}, got shape {tuple(input_shape)}")
            sp = [i for i in range(nsp + 2) if i not in (n_axis, c_axis)]
            out = list(input_shape)
            for i, w, s, p in zip(sp, window_shape, strides, pads):
                out[i] = _window_out(input_shape[i], w, s, p)
            return tuple(out), ()

        def apply_fun(params, inputs, **kwargs):
            pad = padding if isinstance(padding, str) else full_pads
            init = -fnp.inf if kind == "max" else 0
            out = lax.reduce_window(inputs, fnp.asarray(init, inputs.dtype), reducer, window,
                                    steps, pad)
            if kind != "avg":
                return out
            # Divide by the number of real (unpadded) elements in each window.
            sp_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in (n_axis, c_axis))
            counts = lax.reduce_window(fnp.ones(sp_shape, inputs.dtype),
                                       fnp.asarray(0, inputs.dtype), lax.add, tuple(window_shape),
                                       strides, padding)
            for i in sorted((n_axis, c_axis)):
                counts = fnp.expand_dims(counts, i)
            return out / counts

        return init_fun, apply_fun

    layer.__name__ = layer.__qualname__ = {"max": "MaxPool", "sum": "SumPool",
                                           "avg": "AvgPool"}[kind]
    layer.__doc__ = (f"{kind.capitalize()} pooling over ``window_shape`` windows of the spatial "
                     "axes (channels-last by default; ``spec='NCHW'`` for channels-first). "
                     + ("Padding is excluded from the average." if kind == "avg" else ""))
    return layer


MaxPool = _pooling("max")
SumPool = _pooling("sum")
AvgPool = _pooling("avg")


def _flatten() -> Layer:
    def init_fun(rng, input_shape):
        rest = math.prod(input_shape[1:])
        return (input_shape[0], -1 if rest < 0 else rest), ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()
"""Flatten all but the leading (batch) axis."""

Identity = elementwise(lambda x: x)
"""Pass the inputs through unchanged."""


def FanOut(num: int) -> Layer:  # noqa: N802
    """Copy the input into a list of ``num`` inputs (for :func:`parallel`)."""
    init_fun = lambda rng, input_shape: ([input_shape] * num, ())
    apply_fun = lambda params, inputs, **kwargs: [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    init_fun = lambda rng, input_shape: (input_shape[0], ())
    apply_fun = lambda params, inputs, **kwargs: functools.reduce(lambda a, b: a + b, inputs)
    return init_fun, apply_fun


FanInSum = _fan_in_sum()
"""Sum a list of inputs of one shape."""


def FanInConcat(axis: int = -1) -> Layer:  # noqa: N802
    """Concatenate a list of inputs along ``axis``."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:  # noqa: N802
    """Dropout with ``apply_fun(params, inputs, rng=key)``.

    As in ``jax.example_libraries.stax``, **``rate`` is the probability of keeping** a unit
    (kept units are divided by ``rate``), so ``Dropout(0.9)`` drops 10%; the same key gives the
    same mask as jax's. With ``mode`` other than ``"train"`` the layer is the identity and
    needs no key (jax's asks for one anyway); ``apply_fun(..., mode="inference")`` chooses
    the mode per call (``fx.export.freeze`` passes it).
    """
    if not 0 < rate <= 1:
        raise ValueError(f"Dropout: rate (the keep probability) must be in (0, 1], got {rate}")

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        if kwargs.get("mode", mode) != "train":
            return inputs
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout: apply_fun needs a key in train mode: call "
                             "apply_fun(params, inputs, rng=key) with key from fx.random.key")
        keep = random.bernoulli(rng, rate, inputs.shape)
        return fnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# --- combinators -----------------------------------------------------------------------------


def serial(*layers: Layer) -> Layer:
    """Layers one after the other; params are a list with one entry per layer. A key passed
    as ``rng=`` is split into one key per layer."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        for fun, p, r in zip(apply_funs, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Layers side by side: a list of inputs goes in, the list of their outputs comes out;
    combine with :func:`FanOut` and :func:`FanInSum`/:func:`FanInConcat`."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        pairs = [init(r, s) for init, r, s in zip(init_funs, rngs, input_shape)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[tuple], Layer]) -> Layer:
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
