"""Helpers shared by the tests: random arrays of every element size, an independent NumPy
reference of a relayout, and a small DLPack library that stands in for torch."""

import ctypes
import sys
import types

import numpy as np

# One dtype per element size relayout moves natively, and a few it moves as several units.
DTYPES = [np.uint8, np.int8, np.float16, np.int16, np.float32, np.int32, np.float64, np.int64]
ODD_DTYPES = [np.complex128, np.dtype("S3"), np.dtype("V6")]


def random_array(shape, dtype, seed=0):
    """An array of random bits (NaN payloads and all) of `shape` and `dtype`."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return rng.integers(0, 256, size=n, dtype=np.uint8).view(dtype).reshape(shape)


def same_bits(a, b):
    """Whether two arrays have one dtype, one shape and the same bytes (NaNs compared as bits)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return np.ascontiguousarray(a).view(np.uint8).tobytes() == np.ascontiguousarray(b).view(np.uint8).tobytes()


def reference(src, buf, dst, fill=0):
    """The destination buffer of the relayout from `src` to `dst` of the flat buffer `buf`,
    computed from the layouts' offsets alone: what every kernel must produce."""
    so, do = src.offsets(), dst.offsets()
    s0, d0 = min(int(so.min()), 0), min(int(do.min()), 0)
    out = np.full(dst.cosize, fill, dtype=buf.dtype)
    out[do - d0] = buf[so - s0]
    return out


# The DLPack C structs, to read and write capsules the way another library does.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _tensor_of(capsule):
    return _DLManagedTensor.from_address(_get_pointer(capsule, b"dltensor")).dl_tensor


BFLOAT = 4


def _make_fakelib():
    """A module `fakelib` whose tensors speak only DLPack, like torch's: `fakelib.Tensor(array,
    code)` exports a NumPy array's memory with DLPack type code `code` (4 for bfloat16), and
    `fakelib.from_dlpack` imports a capsule without copying."""
    lib = types.ModuleType("fakelib")

    class Tensor:
        def __init__(self, array, code=None, keep=None):
            self.array = array
            self.code = code
            self._keep = keep

        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            capsule = self.array.__dlpack__()
            if self.code is not None:
                _tensor_of(capsule).dtype.code = self.code
            return capsule

        def __dlpack_device__(self):
            return (1, 0)

    Tensor.__module__ = "fakelib"

    def from_dlpack(obj):
        capsule = obj.__dlpack__()
        t = _tensor_of(capsule)
        assert t.device.device_type == 1 and t.dtype.lanes == 1
        itemsize = t.dtype.bits // 8
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = tuple(t.strides[i] * itemsize for i in range(t.ndim)) if t.strides else None
        n = int(np.prod(shape, dtype=np.int64))
        raw = (ctypes.c_uint8 * max(n * itemsize, 1)).from_address(t.data + t.byte_offset)
        flat = np.frombuffer(raw, dtype=np.uint8)[: n * itemsize].view(f"u{itemsize}")
        array = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides or None)
        return Tensor(array, t.dtype.code, keep=capsule)

    lib.Tensor = Tensor
    lib.from_dlpack = from_dlpack
    sys.modules["fakelib"] = lib
    return lib


fakelib = _make_fakelib()
