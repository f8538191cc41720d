"""DLPack: tensors of other libraries in, the same library's tensors out (a stand-in library
`fakelib` that speaks only DLPack, like torch), and torch itself where it is installed."""

import sys
import types

import numpy as np
import pytest

import relayout
from support import BFLOAT, fakelib, random_array, reference, same_bits

FLOAT = 2


def test_tensors_in_give_tensors_of_their_library_out():
    a = random_array((6, 10, 12), np.float32, seed=11)
    for view in [a, a[::2, ::-1], a.transpose(2, 0, 1)[:, 1:]]:
        t = fakelib.Tensor(view)
        for axes in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
            got = relayout.transpose(t, axes)
            assert isinstance(got, fakelib.Tensor)
            assert got.code == FLOAT  # float32 stays float32
            want = np.ascontiguousarray(view.transpose(axes))
            assert got.array.shape == want.shape
            assert same_bits(got.array.view(np.float32), want)


def test_bfloat16_keeps_its_type_through_dlpack():
    bits = random_array((8, 24), np.uint16, seed=12)
    t = fakelib.Tensor(bits, code=BFLOAT)
    got = relayout.transpose(t, (1, 0))
    assert isinstance(got, fakelib.Tensor) and got.code == BFLOAT
    assert same_bits(got.array, np.ascontiguousarray(bits.T))
    tiled = relayout.to_layout(t, "xla:bf16[8,24]{1,0:T(8,16)(2,1)}", pad_value=-1.5)
    assert isinstance(tiled, fakelib.Tensor) and tiled.code == BFLOAT
    dst = relayout.Layout("xla:bf16[8,24]{1,0:T(8,16)(2,1)}")
    want = reference(relayout.Layout.row_major([8, 24]), bits.reshape(-1), dst, fill=0xBFC0)
    assert same_bits(tiled.array, want)
    back = relayout.from_layout(tiled, dst)
    assert isinstance(back, fakelib.Tensor) and back.code == BFLOAT
    assert same_bits(back.array, bits)


def test_kernels_read_and_write_tensors():
    k = relayout.compile("cute:(16,16):(16,1)", "cute:(16,16):(1,16)", dtype="i32")
    src = fakelib.Tensor(np.arange(256, dtype=np.int32))
    got = k(src)
    assert isinstance(got, fakelib.Tensor)
    assert got.array.view(np.int32).tolist() == np.arange(256).reshape(16, 16).T.reshape(-1).tolist()
    memory = np.zeros(256, np.int32)
    out = fakelib.Tensor(memory)
    assert k(src, out=out) is out
    assert memory.reshape(16, 16).tolist() == np.arange(256).reshape(16, 16).T.tolist()
    with pytest.raises(ValueError, match="source and destination buffers overlap"):
        k(out, out=fakelib.Tensor(memory))


def test_results_go_back_through_the_librarys_from_dlpack():
    # A library whose from_dlpack is NumPy's: NumPy's own DLPack consumer reads our export.
    lib = types.ModuleType("numpylike")

    class Array:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    Array.__module__ = "numpylike"
    lib.Array, lib.from_dlpack = Array, np.from_dlpack
    sys.modules["numpylike"] = lib
    try:
        a = random_array((5, 7, 9), np.float64, seed=13)
        got = relayout.transpose(Array(a), (2, 1, 0))
        assert isinstance(got, np.ndarray)
        assert same_bits(got, np.ascontiguousarray(a.transpose(2, 1, 0)))
        del got  # NumPy calls the export's deleter
    finally:
        del sys.modules["numpylike"]


def test_a_library_without_from_dlpack_gets_numpy_arrays():
    class Bare:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__()

    a = random_array((4, 6), np.int16, seed=14)
    got = relayout.transpose(Bare(a))
    assert isinstance(got, np.ndarray) and same_bits(got, np.ascontiguousarray(a.T))


def test_tensors_on_other_devices_are_refused():
    class OnGpu(fakelib.Tensor):
        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(ValueError, match="DLPack device type 2"):
        relayout.transpose(OnGpu(np.zeros(4, np.float32)))


def test_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed: the DLPack path is tested with fakelib above")
    for dtype in [torch.uint8, torch.int16, torch.bfloat16, torch.float32, torch.float64]:
        t = (torch.arange(2 * 3 * 4 * 5) % 251).to(dtype).reshape(2, 3, 4, 5)
        for axes in [(0, 2, 3, 1), (3, 2, 1, 0), (1, 0, 3, 2)]:
            got = relayout.transpose(t, axes)
            assert isinstance(got, torch.Tensor) and got.dtype == dtype
            assert torch.equal(got, t.permute(axes).contiguous())
        view = t[:, 1:, ::2]
        assert torch.equal(relayout.transpose(view, (2, 0, 1, 3)), view.permute(2, 0, 1, 3).contiguous())
    out = torch.empty(5, 4, 3, 2)
    t = torch.randn(2, 3, 4, 5)
    assert relayout.transpose(t, (3, 2, 1, 0), out=out) is out
    assert torch.equal(out, t.permute(3, 2, 1, 0).contiguous())
