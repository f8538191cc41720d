"""relayout.compile and kernels: every notation against the offsets of its layouts, every
element size, threads, pad values, out=, and bad input."""

import array

import numpy as np
import pytest

import relayout
from support import DTYPES, random_array, reference, same_bits

# Source and destination pairs in every notation (and between notations).
PAIRS = [
    ("cute:(64,64):(64,1)", "cute:(64,64):(1,64)"),
    ("cute:(6,8):(8,1)", "cute:((2,3),(2,4)):((1,16),(2,4))"),
    ("moye:(4, (2, 3)):(2, (1, 8))", "cute:(4,6):(6,1)"),
    ("xla:f32[37,50]{1,0}", "xla:f32[37,50]{1,0:T(8,16)}"),
    ("xla:f32[40,48]{1,0}", "xla:f32[40,48]{0,1:T(4,4)(2,1)}"),
    ("tvm:[2,32,5,5] lambda n,c,h,w: [n, c, h, w]", "tvm:[2,32,5,5] lambda n,c,h,w: [n, c//16, h, w, c%16]"),
    ("tvm:[14] lambda i: [i // 4, i % 4]", "morello:[14] [0]"),
    ("morello:[64] [0]", "morello:[64] [0, 0 oe(8)]"),
    ("morello:[6,8] [1, 0, 1 p(4)]", "cute:(6,8):(-8,1)"),
    ("cute:(5,7):(0,1)", "cute:(5,7):(1,5)"),
]


def compile_as(src, dst, dtype, **kw):
    """The kernel for `dtype` elements; XLA layouts name their own type, so pass theirs."""
    named = relayout.Layout(src).dtype or relayout.Layout(dst).dtype
    if named is not None:
        return relayout.compile(src, dst, **kw) if np.dtype(dtype).itemsize == 4 else None
    return relayout.compile(src, dst, dtype=dtype, **kw)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_notation_at_every_element_size(dtype):
    for src, dst in PAIRS:
        kernel = compile_as(src, dst, dtype)
        if kernel is None:
            continue
        s, d = relayout.Layout(src), relayout.Layout(dst)
        a = random_array((s.cosize,), dtype, seed=s.cosize)
        got = kernel(a)
        assert got.shape == (d.cosize,) and got.dtype == a.dtype
        assert same_bits(got, reference(s, a, d)), (src, dst)
        # Into a given buffer: the same, and the buffer comes back.
        out = random_array((d.cosize,), dtype, seed=1)
        want = out.copy()
        want[:] = reference(s, a, d)
        mask = np.zeros(d.cosize, bool)
        mask[d.offsets() - min(int(d.offsets().min()), 0)] = True
        want[~mask] = out[~mask]  # padding slots are left alone
        assert kernel(a, out=out) is out
        assert same_bits(out, want), (src, dst)


def test_threads_and_tuning():
    src, dst = "cute:(1024,2048):(2048,1)", "cute:(1024,2048):(1,1024)"
    a = random_array((1024 * 2048,), np.float32, seed=2)
    want = reference(relayout.Layout(src), a, relayout.Layout(dst))
    k = relayout.compile(src, dst, threads=2)
    assert k.threads == 2
    assert same_bits(k(a), want)
    tuned = relayout.compile(src, dst, tune=True)
    for _ in range(50):
        assert same_bits(tuned(a), want)


def test_pad_values():
    src, dst = "cute:(3,5):(5,1)", "xla:f32[3,5]{1,0:T(2,2)}"
    a = np.arange(15, dtype=np.float32)
    got = relayout.compile(src, dst, pad_value=-1.5)(a)
    assert got.tolist() == reference(relayout.Layout(src), a, relayout.Layout(dst), fill=-1.5).tolist()
    zeros = relayout.compile(src, dst)(a)
    assert zeros.tolist() == reference(relayout.Layout(src), a, relayout.Layout(dst), fill=0).tolist()
    for dtype, pad, bits in [("bf16", -1.5, 0xBFC0), ("f16", -1.5, 0xBE00), ("i8", -3, 0xFD), ("u64", 2**64 - 1, 2**64 - 1)]:
        k = relayout.compile("cute:3:1", "cute:3:2", dtype=dtype, pad_value=pad)
        size = {"bf16": 2, "f16": 2, "i8": 1, "u64": 8}[dtype]
        buf = np.arange(3, dtype=f"u{size}")
        assert k(buf).tolist() == [0, bits, 1, bits, 2]
    with pytest.raises(TypeError, match="does not fit in u8"):
        relayout.compile("cute:3:1", "cute:3:2", dtype="u8", pad_value=256)
    with pytest.raises(TypeError, match="not a f32 value"):
        relayout.compile("cute:3:1", "cute:3:2", pad_value="x")


def test_dtypes_by_any_name_and_the_inspection_text():
    for name in ["float64", "f64", np.float64, np.dtype("<f8"), "int64", "double", "c8"]:
        k = relayout.compile("cute:(8,8):(8,1)", "cute:(8,8):(1,8)", dtype=name)
        assert k(np.arange(64, dtype=np.float64)).reshape(8, 8).T.tolist() == np.arange(64.0).reshape(8, 8).tolist()
    k = relayout.compile("cute:(64,64):(64,1)", "cute:(64,64):(1,64)")
    assert k.dtype == "f32" and "transpose" in k.plan
    assert "shuffle" in k.clif()
    assert k.asm().strip()
    assert k.src == relayout.Layout("cute:(64,64):(64,1)") and k.dst.cosize == 4096
    assert relayout.compile("xla:bf16[8,8]{1,0}", "xla:bf16[8,8]{0,1}").dtype == "bf16"
    with pytest.raises(TypeError, match="conflicting element types"):
        relayout.compile("xla:bf16[8,8]{1,0}", "xla:bf16[8,8]{0,1}", dtype="float32")
    with pytest.raises(TypeError, match="unknown element type"):
        relayout.compile("cute:3:1", "cute:3:1", dtype="float128x")
    with pytest.raises(TypeError, match="1, 2, 4 or 8 bytes"):
        relayout.compile("cute:3:1", "cute:3:1", dtype=np.complex128)


def test_buffer_protocol_objects():
    k = relayout.compile("cute:(2,3):(3,1)", "cute:(2,3):(1,2)", dtype="u8")
    want = [0, 3, 1, 4, 2, 5]
    assert k(bytes(range(6))).tolist() == want
    assert k(bytearray(range(6))).tolist() == want
    assert k(memoryview(bytes(range(6)))).tolist() == want
    out = bytearray(6)
    assert k(bytes(range(6)), out=out) is out and list(out) == want
    k32 = relayout.compile("cute:(2,3):(3,1)", "cute:(2,3):(1,2)", dtype="i32")
    assert k32(array.array("i", range(6))).tolist() == want
    assert k32(np.arange(6, dtype=np.int32).reshape(2, 3)).tolist() == want  # any C-contiguous shape


def test_bad_input_is_an_exception_with_the_library_message():
    k = relayout.compile("cute:(4,6):(6,1)", "cute:(4,6):(1,4)")
    a = np.arange(24, dtype=np.float32)
    with pytest.raises(ValueError, match=r"^source buffer too short: the layout needs 24 elements, the slice has 23$"):
        k(a[:23])
    with pytest.raises(ValueError, match=r"^destination buffer too short"):
        k(a, out=np.zeros(20, np.float32))
    with pytest.raises(TypeError, match=r"^element type mismatch: "):
        k(a.astype(np.float64))
    with pytest.raises(TypeError, match=r"^element type mismatch: "):
        k(a, out=np.zeros(24, np.int16))
    with pytest.raises(ValueError, match="C-contiguous"):
        k(np.arange(48, dtype=np.float32)[::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        k(a, out=np.zeros(48, np.float32)[::2])
    with pytest.raises(ValueError, match="read-only"):
        k(a, out=np.frombuffer(bytes(96), np.float32))
    with pytest.raises(TypeError, match="must be a NumPy array"):
        k(list(range(24)))
    with pytest.raises(ValueError, match=r"^source and destination buffers overlap$"):
        k(a, out=a)
    big = np.arange(48, dtype=np.float32)
    with pytest.raises(ValueError, match=r"^source and destination buffers overlap$"):
        k(big[:24], out=big[20:44])
    assert np.array_equal(big, np.arange(48, dtype=np.float32))  # nothing was written
    k(big[:24], out=big[24:])  # adjacent is fine
    assert np.array_equal(big[24:], reference(k.src, big[:24], k.dst))
    with pytest.raises(ValueError, match=r"^shape mismatch: "):
        relayout.compile("cute:(4,6):(6,1)", "cute:(6,4):(1,6)")
    with pytest.raises(ValueError, match=r"^destination layout is not injective: "):
        relayout.compile("cute:(4,6):(6,1)", "cute:(4,6):(1,1)")
    with pytest.raises(ValueError, match=r"^cute parse error at column 9: "):
        relayout.compile("cute:(2,x):(1,2)", "cute:(2,3):(1,2)")
    with pytest.raises(TypeError, match="relayout.Layout or layout text"):
        relayout.compile(3, "cute:3:1")


def test_large_streamed_layouts_into_new_and_given_arrays():
    # Above the host's streaming threshold (8 MiB with a 32 MiB last-level cache) copies and
    # zips stream into given buffers, and from 32 MiB on they take ordinary stores into new
    # arrays; both must move the same bits.
    n = 9 << 20
    src, dst = f"morello:[{n}] [0]", f"morello:[{n}] [0, 0 oe(16)]"
    k = relayout.compile(src, dst)
    a = random_array((n,), np.float32, seed=21)
    want = reference(relayout.Layout(src), a, relayout.Layout(dst))
    assert same_bits(k(a), want)
    out = np.empty(n, np.float32)
    assert same_bits(k(a, out=out), want)
    pairs = a.reshape(-1, 8, 2)
    assert same_bits(relayout.transpose(pairs, (0, 2, 1)).reshape(-1), want)
    assert same_bits(relayout.transpose(pairs, (0, 2, 1), out=out.reshape(-1, 2, 8)).reshape(-1), want)
    assert same_bits(relayout.transpose(a.reshape(1, -1), (0, 1)), a.reshape(1, -1))
