"""relayout.Layout and relayout.layout_of."""

import numpy as np
import pytest

import relayout

# One worked example per notation, with its offsets in row-major order of the logical shape.
NOTATIONS = {
    "cute:(2,(2,2)):(4,(2,1))": [0, 2, 1, 3, 4, 6, 5, 7],
    "moye:(4, (2, 3)):(2, (1, 8))": None,
    "xla:f32[3,5]{1,0:T(2,2)}": [0, 1, 4, 5, 8, 2, 3, 6, 7, 10, 12, 13, 16, 17, 20],
    "tvm:[14] lambda i: [i // 4, i % 4]": list(range(14)),
    "morello:[16] [0, 0 oe(8)]": [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15],
}


def strided_offsets(shape, strides):
    """The offset of every coordinate of a strided layout, in row-major order."""
    if not shape:
        return np.zeros(1, np.int64)
    grids = np.indices(shape).reshape(len(shape), -1)
    return (np.array(strides, np.int64)[:, None] * grids).sum(axis=0)


def test_every_notation():
    for text, offsets in NOTATIONS.items():
        layout = relayout.Layout(text)
        assert isinstance(layout.shape, tuple)
        assert layout.size == int(np.prod(layout.shape))
        got = layout.offsets()
        assert got.dtype == np.int64 and got.shape == (layout.size,)
        if offsets is not None:
            assert got.tolist() == offsets
        assert layout.cosize >= got.max() - min(got.min(), 0) + 1
        assert repr(layout) == f"Layout({text!r})"
        assert "->" in str(layout)
        assert relayout.Layout(text) == layout and hash(relayout.Layout(text)) == hash(layout)
    moye = relayout.Layout("moye:(4, (2, 3)):(2, (1, 8))")
    assert moye.offsets()[:8].tolist() == [0, 1, 8, 9, 16, 17, 2, 3]
    xla = relayout.Layout("xla:bf16[3,5]{1,0:T(2,2)}")
    assert xla.dtype == "bf16" and xla.cosize == 24
    assert relayout.Layout("cute:(2,3):(1,2)").dtype is None
    assert xla.offset([2, 3]) == 17
    assert xla.is_injective
    assert not relayout.Layout("cute:(4,2):(1,0)").is_injective


def test_layouts_of_strided_views():
    base = np.arange(720, dtype=np.float32).reshape(6, 10, 12)
    views = [
        base,
        base[::2, ::-1, 3:9:3],
        base.transpose(2, 0, 1),
        base[..., 5],
        np.broadcast_to(base[0, 0], (3, 12)),
        np.float32(1.5),
    ]
    for v in views:
        v = np.asarray(v)
        layout = relayout.layout_of(v)
        strides = [s // v.itemsize for s in v.strides]
        assert layout.shape == v.shape
        assert layout == relayout.Layout.from_strides(v.shape, strides)
        assert layout.offsets().tolist() == strided_offsets(v.shape, strides).tolist()
        # The offsets, from the first element, find every element of the view.
        flat = base.reshape(-1)
        if v.base is not None and np.shares_memory(v, base):
            first = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
            assert np.array_equal(flat[first + layout.offsets()], v.reshape(-1))
    assert relayout.layout_of(memoryview(b"abcdef")).shape == (6,)
    assert relayout.Layout.row_major([2, 3]) == relayout.Layout.from_strides([2, 3], [3, 1])


def test_bad_layouts_are_value_errors_with_the_library_message():
    with pytest.raises(ValueError, match=r"^cute parse error at column 10: "):
        relayout.Layout("cute:(2,4")
    with pytest.raises(ValueError, match=r"^layout parse error at column 1: expected a notation prefix"):
        relayout.Layout("(2,3):(1,2)")
    with pytest.raises(ValueError, match=r"^invalid layout: "):
        relayout.Layout("morello:[6] [0, 0 p(4)]")
    with pytest.raises(ValueError, match=r"^unsupported: "):
        relayout.Layout("cute:(8,64):(_1@0,_1@1)")
    with pytest.raises(ValueError, match="invalid layout"):
        relayout.Layout.from_strides([2, 3], [1])
    with pytest.raises(ValueError, match="coordinate"):
        relayout.Layout("cute:(2,3):(1,2)").offset([2, 0])
    with pytest.raises(ValueError, match="not whole 4-byte elements"):
        relayout.layout_of(np.ndarray((2, 2), np.int32, buffer=bytearray(64), strides=(12, 6)))
    # An extent of 0 is an empty tensor, not an error.
    assert relayout.layout_of(np.zeros((3, 0))).cosize == 0
    assert relayout.Layout.from_strides([2, 0], [1, 1]).cosize == 0
    with pytest.raises(TypeError, match="must be a NumPy array"):
        relayout.layout_of([1, 2, 3])
