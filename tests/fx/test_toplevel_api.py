"""fx's top-level names as jax's (issue 13, part B), each compared with jax where jax has it,
and the coverage of jax's top-level namespace: what fx lacks is an explicit, reasoned list."""

import contextlib
import io
import json
import subprocess
import sys

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

X = np.linspace(0.1, 1.0, 6).astype(np.float32).reshape(2, 3)


def close(a, b, rtol=2e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _spec(s):
    return (tuple(s.shape), np.dtype(s.dtype).name, bool(getattr(s, "weak_type", False)))


# --- shapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["matmul", "scalar", "pytree"])
def test_eval_shape_matches_jax(case):
    def run(m, np_):
        if case == "matmul":
            return m.eval_shape(lambda x: x @ x.T, m.ShapeDtypeStruct((4, 3), np.float32))
        if case == "scalar":
            return m.eval_shape(lambda x: x * 2, 1.0)
        return m.eval_shape(lambda p, x: {"y": np_.tanh(x @ p["w"]), "n": np_.sum(x)},
                            {"w": np.ones((3, 5), np.float32)}, X)

    got, want = run(fx, fnp), run(jax, jnp)
    want_specs = [_spec(s) for s in jax.tree_util.tree_leaves(want)]
    if case == "scalar":  # a Python float: the mode's default float, weakly typed (jax: x64)
        want_specs = [((), np.dtype(fx.dtypes.default_float_dtype()).name, True)]
    assert [_spec(s) for s in fx.tree_util.tree_leaves(got)] == want_specs
    assert fx.tree_util.tree_structure(got) == fx.tree_util.tree_structure(
        jax.tree_util.tree_map(lambda s: 0, want))


def test_eval_shape_computes_nothing():
    calls = []

    def f(x):
        calls.append(type(x).__name__)
        return fnp.sin(x)

    out = fx.eval_shape(f, fx.ShapeDtypeStruct((1000, 1000), np.float32))
    assert out == fx.ShapeDtypeStruct((1000, 1000), np.float32)
    assert calls and "Array" not in calls  # traced, never run on data


def test_shape_dtype_struct_repr_eq_and_lower():
    s = fx.ShapeDtypeStruct((8, 3), np.float32)
    assert repr(s) == repr(jax.ShapeDtypeStruct((8, 3), np.float32))
    assert s == fx.ShapeDtypeStruct([8, 3], "float32") and hash(s) == hash(
        fx.ShapeDtypeStruct((8, 3), np.float32))
    assert (s.ndim, s.size) == (2, 24)
    text = fx.jit(lambda x: fnp.sin(x) * 2).lower(s).as_text()
    assert "f32[8,3]" in text and "sin" in text
    with pytest.raises(TypeError, match="ShapeDtypeStruct: shape must be a sequence of integers"):
        fx.ShapeDtypeStruct(3.5, np.float32)


def test_jitted_function_eval_shape():
    def run(m, np_):
        f = m.jit(lambda x, n: {"a": np_.tile(x, n)}, static_argnums=1)
        return f.eval_shape(m.ShapeDtypeStruct((3,), np.float32), 2)

    got, want = run(fx, fnp), run(jax, jnp)
    assert list(got) == list(want) == ["a"]
    assert repr(got["a"]) == repr(want["a"])


def test_typeof():
    for x in (X, np.int32(3), 1.0):
        got, want = fx.typeof(fnp.asarray(x) if isinstance(x, np.ndarray) else x), jax.typeof(x)
        dtype = fx.dtypes.default_float_dtype() if isinstance(x, float) else want.dtype
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, dtype, want.weak_type)
    with pytest.raises(TypeError, match="fx.typeof: str is not an array type"):
        fx.typeof("a")


# --- host and devices -------------------------------------------------------------------------


def test_block_until_ready_and_device_get():
    tree = {"a": fnp.ones(2), "b": [fnp.zeros(3), 4]}
    assert fx.block_until_ready(tree) is tree
    got = fx.device_get(tree)
    want = jax.device_get({"a": jnp.ones(2), "b": [jnp.zeros(3), 4]})
    assert type(got["a"]) is type(want["a"]) is np.ndarray
    assert got["b"][1] == want["b"][1] == 4
    close(got["b"][0], want["b"][0])
    with pytest.raises(TypeError, match=r"fx.device_get: got a traced f\d+\[2\]"):
        fx.jit(fx.device_get)(fnp.ones(2))


def test_device_counts():
    assert fx.device_count() == len(fx.devices()) == fx.local_device_count() >= 1
    assert fx.local_devices() == fx.devices()
    assert all(isinstance(d, fx.Device) for d in fx.devices())
    assert (fx.process_index(), fx.process_count()) == (jax.process_index(), jax.process_count())


# --- differentiation --------------------------------------------------------------------------


def test_jacobian_is_jacrev():
    f = lambda np_: (lambda x: np_.sin(x) * x.sum())  # noqa: E731
    assert fx.jacobian is fx.jacrev
    close(fx.jacobian(f(fnp))(X), jax.jacobian(f(jnp))(X))


def test_linear_transpose():
    def f(np_):
        return lambda x, y: (2.0 * x.sum(axis=0) + y, x.T)

    primals = (X, np.ones(3, np.float32))
    ct = (np.arange(3, dtype=np.float32), np.ones((3, 2), np.float32))
    got = fx.linear_transpose(f(fnp), *primals)(ct)
    want = jax.linear_transpose(f(jnp), *primals)(ct)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        close(g, w)
    specs = [fx.ShapeDtypeStruct(p.shape, p.dtype) for p in primals]
    close(fx.linear_transpose(f(fnp), *specs)(ct)[0], want[0])
    with pytest.raises(NotImplementedError, match="sin") as e:
        fx.linear_transpose(fnp.sin, X)(X)
    assert "is the function linear" in "".join(e.value.__notes__)
    with pytest.raises(TypeError, match="linear_transpose of .*: primal leaf 0 is i32"):
        fx.linear_transpose(lambda x: x, np.int32(1))



def test_linear_transpose_of_bilinear_ops_names_the_nonlinear_operand():
    y = np.float32(4.0)
    close(fx.linear_transpose(lambda x: x / y, X)(X)[0], jax.linear_transpose(
        lambda x: x / y, X)(X)[0])
    close(fx.linear_transpose(lambda x: y * x, X)(X)[0], jax.linear_transpose(
        lambda x: y * x, X)(X)[0])
    with pytest.raises(TypeError, match=r"div: .*divisor y \(f32\[2,3\]\) is a linear input"):
        fx.linear_transpose(lambda x: 1.0 / x, X)(X)
    with pytest.raises(TypeError, match=r"mul: both operands .* are linear inputs"):
        fx.linear_transpose(lambda x: x * x, X)(X)
    # grad still differentiates both: it linearizes first
    close(fx.grad(lambda x: (x * x / (x + 2.0)).sum())(X),
          jax.grad(lambda x: (x * x / (x + 2.0)).sum())(X))

def _clipped_log(custom_gradient, np_):
    @custom_gradient
    def f(x):
        return np_.log(x), lambda g: g / np_.maximum(x, 1.0)

    return f


@pytest.mark.parametrize("how", ["grad", "jit(grad)", "grad(jit)", "vmap(grad)"])
def test_custom_gradient(how):
    def run(m, np_, xs):
        f = _clipped_log(m.custom_gradient, np_)
        return {"grad": m.grad(f), "jit(grad)": m.jit(m.grad(f)), "grad(jit)": m.grad(m.jit(f)),
                "vmap(grad)": m.vmap(m.grad(f))}[how](xs)

    xs = np.float32(0.5) if how != "vmap(grad)" else np.array([0.5, 2.0], np.float32)
    close(run(fx, fnp, xs), run(jax, jnp, xs))
    close(_clipped_log(fx.custom_gradient, fnp)(2.0), np.log(2.0))


def test_closure_convert():
    def outer(m, np_, x):
        f = lambda y: np_.sin(y) * x  # noqa: E731  (closes over x)
        g, consts = m.closure_convert(f, 1.0)
        return g(2.0, *consts), len(consts)

    got, n = outer(fx, fnp, np.float32(3.0))
    close(got, np.sin(2.0) * 3.0)
    assert n == 0  # a concrete closure is folded in; under a trace it is hoisted
    traced_n = []
    fx.grad(lambda x: traced_n.append(outer(fx, fnp, x)[1]) or outer(fx, fnp, x)[0])(3.0)
    assert traced_n == [1]
    close(fx.grad(lambda x: outer(fx, fnp, x)[0])(3.0),
          jax.grad(lambda x: outer(jax, jnp, x)[0])(3.0))


# --- names on equations -----------------------------------------------------------------------


def test_named_scope_and_named_call_in_make_jaxpr():
    def layer(x):
        return fnp.tanh(x)

    def f(x):
        with fx.named_scope("outer"):
            with fx.named_scope("inner"):
                y = fnp.sin(x)
            return fx.named_call(layer, name="dense")(y) * 2

    lines = str(fx.make_jaxpr(f)(1.0)).splitlines()
    assert any(" sin " in ln and ln.endswith("# outer/inner") for ln in lines)
    assert any(" tanh " in ln and ln.endswith("# outer/dense") for ln in lines)
    assert any(" mul " in ln and ln.endswith("# outer") for ln in lines)
    assert "#" not in str(fx.make_jaxpr(layer)(1.0))  # no scope: the printer is unchanged
    close(f(0.3), np.tanh(np.sin(0.3)) * 2)
    assert fx.named_call(layer).__name__ == "layer"
    # Reverse mode labels the equations transposing named ones (as jax's transpose(...)).
    grad_lines = str(fx.make_jaxpr(fx.grad(f))(0.3)).splitlines()
    assert any(ln.endswith("# transpose(outer/inner)") for ln in grad_lines)
    assert any(ln.endswith("# transpose(outer/dense)") for ln in grad_lines)
    close(fx.grad(f)(0.3), jax.grad(lambda x: jnp.tanh(jnp.sin(x)) * 2)(0.3))


def test_ensure_compile_time_eval():
    def f(m, np_):
        @m.jit
        def g(x):
            with m.ensure_compile_time_eval():
                n = int(np_.sum(np_.arange(4)))  # concrete while tracing
            return x * n

        return g

    close(f(fx, fnp)(X), f(jax, jnp)(X))
    # Operations on traced values are still staged (and work):
    g = fx.jit(lambda x: _under_compile_time_eval(lambda: fnp.sin(x) + fnp.cos(0.0)))
    close(g(X), np.sin(X) + 1)


def _under_compile_time_eval(thunk):
    with fx.ensure_compile_time_eval():
        return thunk()


# --- ad_checkpoint ----------------------------------------------------------------------------


def test_ad_checkpoint_module():
    assert fx.ad_checkpoint.checkpoint is fx.checkpoint
    f = lambda np_: (lambda x: np_.sum(np_.sin(np_.sin(x))))  # noqa: E731
    for name in ("everything_saveable", "nothing_saveable"):
        pol_fx = getattr(fx.checkpoint_policies, name)
        pol_jax = getattr(jax.checkpoint_policies, name)
        close(fx.grad(fx.ad_checkpoint.checkpoint(f(fnp), policy=pol_fx))(X),
              jax.grad(jax.checkpoint(f(jnp), policy=pol_jax))(X))
    with pytest.raises(TypeError, match=r"the policy .* is jax's.*fx.checkpoint_policies"):
        fx.checkpoint(f(fnp), policy=jax.checkpoint_policies.dots_saveable)
    close(fx.ad_checkpoint.checkpoint_name(X, "x"), jax.ad_checkpoint.checkpoint_name(X, "x"))


_RNG = np.random.default_rng(0)
W1, W2 = (_RNG.standard_normal(s).astype(np.float32) for s in ((4, 5), (5, 3)))
XB = _RNG.standard_normal((2, 4)).astype(np.float32)


def _mlp(np_):
    def f(w1, w2):
        h = np_.tanh(XB @ w1)
        return np_.sum(np_.sin(h @ w2))

    return f


POLICIES = ["dots_saveable", "checkpoint_dots", "dots_with_no_batch_dims_saveable",
            "nothing_saveable", "everything_saveable"]


@pytest.mark.parametrize("policy", POLICIES)
def test_checkpoint_policies_against_jax(policy):
    def run(m, np_, transform):
        f = m.checkpoint(_mlp(np_), policy=getattr(m.checkpoint_policies, policy))
        return transform(m)(m.grad(f, argnums=(0, 1)))(W1, W2)

    for transform in (lambda m: (lambda fn: fn), lambda m: m.jit):
        for got, want in zip(run(fx, fnp, transform), run(jax, jnp, transform)):
            close(got, want, rtol=1e-5, atol=1e-6)
    # What reverse mode saves: the same values as jax (matrix products, for the dot policies).
    got = _printed(fx.ad_checkpoint.print_saved_residuals,
                   fx.checkpoint(_mlp(fnp), policy=getattr(fx.checkpoint_policies, policy)),
                   W1, W2)
    want = _printed(jax.ad_checkpoint.print_saved_residuals,
                    jax.checkpoint(_mlp(jnp), policy=getattr(jax.checkpoint_policies, policy)),
                    W1, W2)
    assert got == want


def _named_mlp(np_, name):
    def f(w1, w2):
        h = name(np_.tanh(XB @ w1), "h")
        return np_.sum(np_.sin(name(h @ w2, "z")))

    return f


@pytest.mark.parametrize("policy, names", [("save_only_these_names", ("h",)),
                                           ("save_any_names_but_these", ("h",)),
                                           ("save_anything_except_these_names", ("z",))])
def test_checkpoint_name_policies_against_jax(policy, names):
    def make(m, np_, name):
        pol = getattr(m.checkpoint_policies, policy)(*names)
        return m.checkpoint(_named_mlp(np_, name), policy=pol)

    f_fx = make(fx, fnp, fx.ad_checkpoint.checkpoint_name)
    f_jax = make(jax, jnp, jax.ad_checkpoint.checkpoint_name)
    want = jax.grad(f_jax, argnums=(0, 1))(W1, W2)
    for transform in (lambda fn: fn, fx.jit):
        for got, w in zip(transform(fx.grad(f_fx, argnums=(0, 1)))(W1, W2), want):
            close(got, w, rtol=1e-5, atol=1e-6)
    got = _printed(fx.ad_checkpoint.print_saved_residuals, f_fx, W1, W2)
    saved = _printed(jax.ad_checkpoint.print_saved_residuals, f_jax, W1, W2)
    # The named values saved are jax's; beside them fx may save less than jax does (jax keeps
    # w1 for save_only_these_names('h'), and tanh's output beside the same value named 'h').
    assert [ln for ln in got if "named" in ln] == [ln for ln in saved if "named" in ln] != []
    assert set(got) <= set(saved)


def test_checkpoint_name_outside_checkpoint_is_the_identity():
    assert fx.ad_checkpoint.checkpoint_name(X, "x") is X
    f = lambda x: fx.ad_checkpoint.checkpoint_name(fnp.sin(x), "s") * 2  # noqa: E731
    close(fx.jit(f)(X), np.sin(X) * 2)
    close(fx.grad(lambda x: f(x).sum())(X), 2 * np.cos(X))
    close(fx.vmap(f)(X), np.sin(X) * 2)
    assert "name='s'" in str(fx.make_jaxpr(f)(X))
    with pytest.raises(TypeError, match="checkpoint_name: the name must be a str"):
        fx.ad_checkpoint.checkpoint_name(X, 3)


def test_save_from_both_policies():
    pol = fx.checkpoint_policies.save_from_both_policies(
        fx.checkpoint_policies.nothing_saveable, fx.checkpoint_policies.dots_saveable)
    f = fx.checkpoint(_mlp(fnp), policy=pol)
    want = jax.grad(_mlp(jnp), argnums=(0, 1))(W1, W2)
    for g, w in zip(fx.grad(f, argnums=(0, 1))(W1, W2), want):
        close(g, w, rtol=1e-5, atol=1e-6)
    assert sum("dot_general" in ln for ln in _printed(
        fx.ad_checkpoint.print_saved_residuals, f, W1, W2)) == 2


def test_checkpoint_static_argnums():
    def f(np_):
        return lambda x, n: np_.sum(np_.sin(x) ** n) if n > 1 else np_.sum(x)

    got = fx.grad(fx.checkpoint(f(fnp), static_argnums=(1,)))(X, 2)
    want = jax.grad(jax.checkpoint(f(jnp), static_argnums=(1,)))(X, 2)
    close(got, want)


def _printed(print_fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_fn(*args)
    return sorted(ln.split(" from <")[0].split(" from /")[0] for ln in out.getvalue().splitlines())


def test_print_saved_residuals_matches_jax():
    def f(np_):
        def loss(x, y):
            return np_.sum(np_.sin(x) * y)
        return loss

    args = (np.ones(3, np.float32), np.ones(3, np.float32))
    got = _printed(fx.ad_checkpoint.print_saved_residuals, f(fnp), *args)
    want = _printed(jax.ad_checkpoint.print_saved_residuals, f(jnp), *args)
    assert got == want == ["f32[3] from the argument y", "f32[3] output of cos",
                           "f32[3] output of sin"]


# --- config spellings and switches ------------------------------------------------------------


@pytest.mark.parametrize("option", ["debug_nans", "debug_infs", "disable_jit", "log_compiles"])
def test_config_takes_jax_spellings(option):
    jax_name = f"jax_{option}"
    assert hasattr(jax.config, jax_name)  # the spelling jax code uses
    old = getattr(fx.config, option)
    try:
        fx.config.update(jax_name, True)
        assert getattr(fx.config, option) is True
        assert getattr(fx.config, jax_name) is True and fx.config.read(jax_name) is True
    finally:
        fx.config.update(option, old)
    with pytest.raises(KeyError, match="fx.config: unknown option 'jax_no_such'"):
        fx.config.update("jax_no_such", True)
    with pytest.raises(AttributeError, match="fx.config has no option 'no_such'"):
        fx.config.no_such  # noqa: B018


def test_config_switch_context_managers():
    assert not fx.config.debug_nans
    with fx.debug_nans(True):
        assert fx.config.debug_nans
        with pytest.raises(FloatingPointError):
            fx.jit(lambda x: fnp.log(x))(-fnp.ones(2))
    assert not fx.config.debug_nans
    with fx.log_compiles():
        assert fx.config.log_compiles
    assert not fx.config.log_compiles


def test_debug_infs():
    def run(m, np_):
        with m.debug_infs(True):
            m.jit(lambda x: np_.exp(x) * 2)(np.float32(100.0))

    with pytest.raises(FloatingPointError, match=r"inf"):
        run(jax, jnp)
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan or inf\) encountered in "
                                                  r"exp at .*test_toplevel_api.py"):
        run(fx, fnp)
    assert not fx.config.debug_infs
    fx.jit(lambda x: fnp.exp(x) * 2)(np.float32(100.0))  # off again: no error
    fx.config.update("jax_debug_infs", True)
    try:
        with pytest.raises(FloatingPointError):
            fx.jit(lambda x: -fnp.exp(x))(np.float32(100.0))
    finally:
        fx.config.update("debug_infs", False)


# --- coverage of jax's top-level namespace ----------------------------------------------------

# What `import jax` exposes that fx does not, each with why. Names here are either owned by a
# later issue, not built yet for meshes and sharding, or deprecated in jax. When fx gains one,
# the test fails until it is removed from this list.
MISSING_FROM_FX = {
    # later issues
    "process_indices": "issue 18, multi-process",
    "ffi": "issue 15 (foreign functions)",
    "custom_batching": "custom_vmap: not planned yet",
    "image": "jax.image resizing: not planned yet",
    "float0": "fx tangents of integer inputs are symbolic zeros, not float0 arrays",
    # explicit sharding (jax's sharding-in-types): fx has meshes, NamedSharding, shard_map
    "reshard": "no explicit sharding", "set_mesh": "meshes are set with `with mesh:`",
    "smap": "no explicit sharding",
    "auto_pcast": "no explicit sharding", "remove_size_one_mesh_axis_from_type": "no mesh types",
    "default_device": "a config context of jax's; fx picks devices with FX_BACKEND",
    "copy_to_host_async": "fx copies synchronously (fx.device_get)",
    "transfer_guard": "no implicit transfers to guard",
    "transfer_guard_device_to_device": "no implicit transfers to guard",
    "transfer_guard_device_to_host": "no implicit transfers to guard",
    "transfer_guard_host_to_device": "no implicit transfers to guard",
    "memory": "no memory kinds",
    "live_arrays": "no device-array registry",
    "array_garbage_collection_guard": "no device-array registry",
    # mutable array references (jax's experimental state API)
    "Ref": "no mutable refs", "ref": "no mutable refs", "new_ref": "no mutable refs",
    "empty_ref": "no mutable refs", "free_ref": "no mutable refs", "freeze": "no mutable refs",
    # jax config switches fx has no counterpart for
    "allow_f16_reductions": "config of XLA's reductions", "check_tracer_leaks": "jax config",
    "checking_leaks": "jax config", "debug_key_reuse": "jax config (typed keys)",
    "default_matmul_precision": "fx has no matmul precision modes",
    "default_prng_impl": "fx has one PRNG (threefry)", "enable_checks": "jax config",
    "enable_custom_prng": "fx has one PRNG (threefry)", "explain_cache_misses": "jax config",
    "jax2tf_associative_scan_reductions": "jax2tf only",
    "legacy_prng_key": "fx has one PRNG (threefry)", "no_execution": "jax config",
    "no_tracing": "jax config",
    "numpy_rank_promotion": "fx allows rank promotion, as jax's default",
    "threefry_partitionable": "no sharding", "thread_guard": "jax config",
    # jax internals and tooling
    "ad": "jax internals", "api_util": "jax internals", "lib": "jax internals (jaxlib)",
    "typing": "jax's type aliases", "ops": "segment ops: not planned yet",
    "ds": "dynamic shapes (jax experimental)", "effects_barrier": "no asynchronous effects",
    "monitoring": "jax's event hooks", "profiler": "jax's profiler",
    "print_environment_info": "jax tooling",
    "make_user_context": "jax internals", "softmax_custom_jvp": "jax config (fx.nn.softmax)",
    "version": "fx.__version__",
    # deprecated in jax
    "host_count": "deprecated in jax (process_count)", "host_id": "deprecated (process_index)",
    "host_ids": "deprecated in jax",
}


# Names other parts of issue 13 are adding now: either state passes.
IN_PROGRESS = {"enable_x64": "the x64 mode (issue 13, dtypes)"}


def _jax_public_names() -> set[str]:
    """What a plain ``import jax`` exposes (in a fresh process: the tests import jax
    submodules that would otherwise show up here)."""
    code = "import jax, json; print(json.dumps(sorted(dir(jax))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return {n for n in json.loads(out) if not n.startswith("_")}


def test_jax_top_level_names_are_in_fx_or_listed():
    missing = _jax_public_names() - set(dir(fx)) - set(IN_PROGRESS)
    unlisted = sorted(missing - set(MISSING_FROM_FX))
    stale = sorted(set(MISSING_FROM_FX) - missing)  # fx has it now, or jax no longer does
    assert not unlisted, f"jax names fx lacks, not in MISSING_FROM_FX: {unlisted}"
    assert not stale, f"remove from MISSING_FROM_FX (fx has them, or jax lost them): {stale}"
    assert missing == set(MISSING_FROM_FX)
    # Submodules jax loads lazily, which the plain import does not show:
    for module in ("ad_checkpoint", "flatten_util", "tree_util", "tree", "errors"):
        assert hasattr(fx, module), module
