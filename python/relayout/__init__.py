"""relayout: JIT-compiled tensor relayouts for NumPy arrays and DLPack tensors.

relayout compiles, with Cranelift, a copy kernel for one pair of memory layouts and runs it on
your buffers: fast transposes (``transpose``), conversions into and out of tiled and blocked
layouts (``to_layout``, ``from_layout``) written in CuTe, XLA, TVM or Morello notation
(``Layout``), and kernels you keep (``compile``).

>>> import numpy as np, relayout
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> relayout.transpose(a, (1, 0))
array([[0., 3.],
       [1., 4.],
       [2., 5.]], dtype=float32)
>>> tiled = relayout.to_layout(a, "xla:f32[2,3]{1,0:T(2,2)}")
>>> tiled
array([0., 1., 3., 4., 2., 0., 5., 0.], dtype=float32)
>>> relayout.from_layout(tiled, "xla:f32[2,3]{1,0:T(2,2)}")
array([[0., 1., 2.],
       [3., 4., 5.]], dtype=float32)
"""

from ._relayout import (
    DLPackTensor,
    Kernel,
    Layout,
    __version__,
    _suite_cases,  # the benchmark suite, for benchmarks and tests
    compile,
    from_layout,
    layout_of,
    to_layout,
    transpose,
)

__all__ = [
    "DLPackTensor",
    "Kernel",
    "Layout",
    "__version__",
    "compile",
    "from_layout",
    "layout_of",
    "to_layout",
    "transpose",
]
