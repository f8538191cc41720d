"""relayout.to_layout and relayout.from_layout: strided arrays into layouts' buffers and back."""

import numpy as np
import pytest

import relayout
from support import DTYPES, random_array, reference, same_bits

LAYOUTS = [
    "cute:(12,20):(1,12)",
    "xla:f32[12,20]{1,0:T(8,8)}",
    "xla:f32[12,20]{0,1:T(4,4)(2,1)}",
    "tvm:[12,20] lambda i, j: [j // 8, i, j % 8]",
    "morello:[12,20] [1, 0, 0 oe(4)]",
    "moye:((3,4),20):((20,60),1)",
]


def views_of(base):
    """Strided views of shape (12, 20) of `base` (shape (24, 40))."""
    return [
        base[:12, :20],
        base[::2, ::2],
        base[::-2, 1::2],
        base[12:, ::-2],
        base[:20, :12].T,
        np.broadcast_to(base[0, :20], (12, 20)),
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_views_into_every_notation_and_back(dtype):
    base = random_array((24, 40), dtype, seed=7)
    for text in LAYOUTS:
        dst = relayout.Layout(text)
        if dst.dtype is not None and np.dtype(dtype).itemsize != 4:
            continue
        for v in views_of(base):
            buf = relayout.to_layout(v, dst)
            assert buf.shape == (dst.cosize,) and buf.dtype == v.dtype
            flat = np.ascontiguousarray(v).reshape(-1)
            row_major = relayout.Layout.row_major(v.shape)
            assert same_bits(buf, reference(row_major, flat, dst)), (text, v.strides)
            back = relayout.from_layout(buf, dst)
            assert same_bits(back, np.ascontiguousarray(v)), text
            # Into a strided view of another array: only the view's elements are written.
            target = np.zeros((24, 40), dtype)
            view = target[1::2, ::-2]
            assert relayout.from_layout(buf, text, out=view) is view
            assert same_bits(view, np.ascontiguousarray(v))
            untouched = np.ones((24, 40), bool)
            untouched[1::2, ::-2] = False
            assert not target[untouched].view(np.uint8).any()


def test_pad_value_out_shape_and_threads():
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    dst = "xla:f32[3,5]{1,0:T(2,2)}"
    assert relayout.to_layout(a, dst, pad_value=-1).tolist() == reference(
        relayout.Layout.row_major([3, 5]), a.reshape(-1), relayout.Layout(dst), fill=-1
    ).tolist()
    out = np.full(30, 7.0, np.float32)
    assert relayout.to_layout(a, dst, out=out) is out
    assert out[24:].tolist() == [7.0] * 6
    flat = relayout.from_layout(out, dst, (15,))
    assert flat.tolist() == list(range(15))
    b = random_array((512, 1024), np.int16, seed=8)
    t = relayout.to_layout(b, "cute:(512,1024):(1,512)", threads=2)
    assert same_bits(relayout.from_layout(t, "cute:(512,1024):(1,512)", threads=2), b)


def test_bad_input():
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    dst = relayout.Layout("xla:f32[3,5]{1,0:T(2,2)}")
    with pytest.raises(ValueError, match=r"^shape mismatch: "):
        relayout.to_layout(a.T, dst)
    with pytest.raises(ValueError, match="destination buffer too short"):
        relayout.to_layout(a, dst, out=np.zeros(23, np.float32))
    with pytest.raises(ValueError, match="source and destination buffers overlap"):
        big = np.zeros(40, np.float32)
        relayout.to_layout(big[:15].reshape(3, 5), dst, out=big[10:34])
    with pytest.raises(ValueError, match="source buffer too short"):
        relayout.from_layout(np.zeros(23, np.float32), dst)
    with pytest.raises(ValueError, match="cannot reshape"):
        relayout.from_layout(np.zeros(24, np.float32), dst, (4, 4))
    with pytest.raises(ValueError, match="not both"):
        relayout.from_layout(np.zeros(24, np.float32), dst, (15,), out=np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match=r"^shape mismatch: "):
        relayout.from_layout(np.zeros(24, np.float32), dst, out=np.zeros((5, 3), np.float32))
    with pytest.raises(ValueError, match="not injective"):
        aliased = np.lib.stride_tricks.as_strided(np.zeros(5, np.float32), (3, 5), (0, 4))
        relayout.from_layout(np.zeros(24, np.float32), dst, out=aliased)
    with pytest.raises(ValueError, match="read-only"):
        relayout.from_layout(np.zeros(24, np.float32), dst, out=np.broadcast_to(np.zeros(5, np.float32), (3, 5)))
    with pytest.raises(TypeError, match="element type mismatch"):
        relayout.from_layout(np.zeros(24, np.float32), dst, out=np.zeros((3, 5)))
    with pytest.raises(ValueError, match="source and destination buffers overlap"):
        buf = np.zeros(40, np.float32)
        relayout.from_layout(buf[:24], dst, out=buf[20:35].reshape(3, 5))
    with pytest.raises(TypeError, match="the layout names f32 elements, a has 8-byte elements"):
        relayout.to_layout(np.zeros((3, 5)), dst)
    with pytest.raises(TypeError, match="the layout names f32 elements, buf has 2-byte elements"):
        relayout.from_layout(np.zeros(24, np.int16), dst)
    with pytest.raises(TypeError, match="1, 2, 4 or 8"):
        relayout.to_layout(np.zeros((3, 5), np.complex128), "cute:(3,5):(1,3)")
