"""Type stubs of relayout's extension module (re-exported by the ``relayout`` package)."""

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

# An array relayout reads or writes: a NumPy array, anything with the buffer protocol, or a
# DLPack tensor (an object with ``__dlpack__``, such as a torch tensor on the CPU).
ArrayLike = Any
# An element type: relayout's names ("u8" ... "f64", "f16", "bf16"), NumPy's ("float32",
# np.uint8, np.dtype(...)), "bfloat16", or a torch dtype.
DTypeLike = Union[str, type, np.dtype, Any]
# A layout: a ``Layout``, or notation-prefixed layout text.
LayoutLike = Union["Layout", str]

class Layout:
    """A tensor layout: a logical shape and the buffer offset of every coordinate.

    ``Layout(text)`` parses notation-prefixed text (``"cute:(2,(2,2)):(4,(2,1))"``,
    ``"xla:f32[3,5]{1,0:T(2,2)}"``, ``"tvm:[16,64] lambda i, j: [j // 8, i, j % 8]"``,
    ``"morello:[16] [0, 0 oe(8)]"``).
    """

    def __init__(self, text: str) -> None: ...
    @staticmethod
    def from_strides(shape: Sequence[int], strides: Sequence[int]) -> Layout:
        """The strided layout ``offset(x) = sum(strides[d] * x[d])`` (strides in elements)."""
    @staticmethod
    def row_major(shape: Sequence[int]) -> Layout:
        """The row-major (C order) layout of ``shape``."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """The logical shape."""
    @property
    def size(self) -> int:
        """The number of logical elements."""
    @property
    def cosize(self) -> int:
        """The number of elements a buffer for this layout holds, padding included."""
    @property
    def dtype(self) -> Optional[str]:
        """The element type the layout text names (XLA's), or None."""
    @property
    def is_injective(self) -> bool:
        """Whether no two coordinates share an offset (the condition for a destination)."""
    def offset(self, coord: Sequence[int]) -> int:
        """The buffer offset of one logical coordinate."""
    def offsets(self) -> npt.NDArray[np.int64]:
        """The offset of every logical coordinate, in row-major order of the shape."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

class Kernel:
    """A compiled relayout from one layout to another, for elements of one size.

    ``kernel(a)`` returns a new 1-D array of ``dst.cosize`` elements; ``kernel(a, out=b)``
    writes into ``b`` and returns it. ``a`` and ``b`` are C-contiguous buffers of the kernel's
    element size.
    """

    def __call__(self, a: ArrayLike, out: Optional[ArrayLike] = None) -> Any: ...
    @property
    def plan(self) -> str:
        """The loop nest the kernel runs."""
    def clif(self) -> str:
        """The kernel's Cranelift IR."""
    def asm(self) -> str:
        """The kernel's machine code, as assembly text."""
    @property
    def src(self) -> Layout:
        """The source layout."""
    @property
    def dst(self) -> Layout:
        """The destination layout."""
    @property
    def dtype(self) -> str:
        """The element type it was compiled for (relayout's name)."""
    @property
    def threads(self) -> int:
        """The threads a run uses."""

class DLPackTensor:
    """A result handed to another library through DLPack (see ``transpose``)."""

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...

def layout_of(array: ArrayLike) -> Layout:
    """The layout of an array or view: its shape and its strides in elements."""

def compile(
    src: LayoutLike,
    dst: LayoutLike,
    dtype: Optional[DTypeLike] = None,
    threads: int = 1,
    pad_value: Optional[Union[int, float]] = None,
    tune: bool = False,
) -> Kernel:
    """Compiles the relayout from ``src`` to ``dst`` (float32 unless ``dtype`` or the layouts
    say otherwise)."""

def transpose(
    a: ArrayLike,
    axes: Optional[Sequence[int]] = None,
    *,
    out: Optional[ArrayLike] = None,
    threads: int = 1,
    tune: bool = False,
) -> Any:
    """``np.ascontiguousarray(np.transpose(a, axes))`` by a compiled kernel (a torch tensor in
    gives a torch tensor out)."""

def to_layout(
    a: ArrayLike,
    dst: LayoutLike,
    *,
    threads: int = 1,
    pad_value: Optional[Union[int, float]] = None,
    out: Optional[ArrayLike] = None,
    tune: bool = False,
) -> Any:
    """Moves any strided array into the buffer of the layout ``dst`` (a 1-D array of
    ``dst.cosize`` elements)."""

def from_layout(
    buf: ArrayLike,
    src: LayoutLike,
    shape: Optional[Sequence[int]] = None,
    *,
    threads: int = 1,
    out: Optional[ArrayLike] = None,
    tune: bool = False,
) -> Any:
    """Moves the buffer of the layout ``src`` into a new C-contiguous array of its shape (or
    ``shape``), or into ``out``."""

def _suite_cases(reduced: bool = False) -> list[dict[str, Any]]:
    """The cases of relayout's benchmark suite."""
