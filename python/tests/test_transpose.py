"""relayout.transpose against np.ascontiguousarray(np.transpose(a, axes))."""

import itertools

import numpy as np
import pytest

import relayout
from support import DTYPES, ODD_DTYPES, random_array, same_bits


def expected(a, axes):
    return np.ascontiguousarray(np.transpose(a, axes))


def check(a, axes, **kw):
    got = relayout.transpose(a, axes, **kw)
    want = expected(a, axes)
    assert isinstance(got, np.ndarray) and got.flags.c_contiguous
    assert same_bits(got, want), (a.shape, a.strides, axes)


SHAPES = [(7,), (5, 9), (16, 17), (2, 3, 4), (3, 1, 5), (2, 3, 4, 5), (4, 3, 2, 2, 3)]


@pytest.mark.parametrize("dtype", DTYPES + ODD_DTYPES, ids=str)
def test_every_permutation_at_every_element_size(dtype):
    for shape in SHAPES:
        a = random_array(shape, dtype)
        for axes in itertools.permutations(range(len(shape))):
            check(a, axes)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_views(dtype):
    base = random_array((6, 10, 12), dtype, seed=1)
    views = [
        base[::2],
        base[:, ::-1],
        base[1::2, 3:, ::-3],
        base[::-1, ::-2, ::-1],
        base.transpose(2, 0, 1)[::3],
        base[..., 5],
        base[:, 4:9, :].swapaxes(0, 2),
        np.broadcast_to(base[0, 0], (3, 4, 12)),
        base.view(np.uint8)[:, :, 1:-1:3] if np.dtype(dtype).itemsize > 1 else base[:, :, 1::2],
    ]
    for v in views:
        for axes in itertools.permutations(range(v.ndim)):
            check(v, axes)


def test_default_axes_negative_axes_and_degenerate_arrays():
    a = random_array((3, 4, 5), np.float32)
    check(a, None)
    assert same_bits(relayout.transpose(a), a.T.copy())
    check(a, (-1, 0, -2))
    check(a, [2, 1, 0])
    for shape in [(0,), (3, 0), (0, 2, 5)]:
        e = np.zeros(shape, np.float32)
        got = relayout.transpose(e)
        assert got.shape == e.T.shape and got.dtype == e.dtype
    scalar = np.array(2.5)
    assert same_bits(relayout.transpose(scalar), scalar)
    assert same_bits(relayout.transpose(scalar, ()), scalar)


def test_misaligned_strides_move_in_smaller_units():
    raw = random_array((4 * 6 * 6 + 2,), np.uint8, seed=3)
    # int32 elements 6 bytes apart: not a whole number of elements, so 2-byte units.
    odd = np.lib.stride_tricks.as_strided(raw[1:].view(np.uint8), (4, 6), (36, 6))
    v = np.ndarray((4, 6), dtype=np.int32, buffer=raw.data, offset=2, strides=(36, 6))
    check(v, (1, 0))
    check(odd, (1, 0))


def test_threads_tuning_and_out():
    a = random_array((256, 8192), np.float32, seed=4)  # 8 MiB: large enough to tune
    check(a, (1, 0), threads=2)
    for _ in range(50):  # through the tuning runs, each checked
        check(a, (1, 0), tune=True)
    out = np.empty((8192, 256), np.float32)
    assert relayout.transpose(a, (1, 0), out=out) is out
    assert same_bits(out, a.T.copy())


def test_suite_cases_at_reduced_size():
    cases = relayout._suite_cases(reduced=True)
    assert len(cases) == len(relayout._suite_cases())
    for case in cases:
        a = random_array(tuple(case["shape"]), case["numpy_dtype"], seed=5)
        check(a, tuple(case["axes"]))
        # The case's layouts describe the same relayout.
        kernel = relayout.compile(case["src"], case["dst"], dtype=case["dtype"])
        got = kernel(a.reshape(-1))
        assert same_bits(got[: a.size], expected(a, case["axes"]).reshape(-1))


def test_bad_input():
    a = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="not a permutation"):
        relayout.transpose(a, (0, 0))
    with pytest.raises(ValueError, match="not a permutation"):
        relayout.transpose(a, (0, 2))
    with pytest.raises(ValueError, match="not a permutation"):
        relayout.transpose(a, (0,))
    with pytest.raises(TypeError, match="sequence of integers"):
        relayout.transpose(a, "ab")
    with pytest.raises(TypeError, match="must be a NumPy array"):
        relayout.transpose([[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="Python objects"):
        relayout.transpose(np.array([[1, None]], dtype=object))
    with pytest.raises(ValueError, match="out has shape"):
        relayout.transpose(a, out=np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        relayout.transpose(a, out=np.zeros((8, 3), np.float32)[::2])
    with pytest.raises(TypeError, match="element type mismatch"):
        relayout.transpose(a, out=np.zeros((4, 3), np.float64))
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros((4, 3), np.float32)
        ro.flags.writeable = False
        relayout.transpose(a, out=ro)
    sq = np.arange(16, dtype=np.float32).reshape(4, 4)
    with pytest.raises(ValueError, match="source and destination buffers overlap"):
        relayout.transpose(sq, out=sq)
    assert np.array_equal(sq, np.arange(16, dtype=np.float32).reshape(4, 4))


def test_large_results_start_on_a_page():
    a = random_array((300, 500), np.float32, seed=6)
    t = relayout.transpose(a)
    assert t.ctypes.data % 4096 == 0 and t.flags.c_contiguous and t.flags.writeable
    assert same_bits(t, a.T.copy())
    tiled = relayout.to_layout(a, "xla:f32[300,500]{1,0:T(8,128)}")
    assert tiled.ctypes.data % 4096 == 0
    del a
    t[...] = 0  # the memory is the result's own, alive without its source
    assert not t.any()
    small = relayout.transpose(np.zeros((4, 4), np.float32))
    assert small.flags.owndata


def test_empty_arrays_transpose_to_empty_arrays():
    # NumPy arrays with a zero extent are tensors of no elements; so are their layouts.
    for shape, axes in [((0, 3), (1, 0)), ((2, 0, 4), (2, 0, 1)), ((0,), (0,))]:
        check(np.zeros(shape, np.float32), axes)
    assert relayout.Layout("cute:(0,4):(4,1)").cosize == 0
