//! A small safe layer over [`crate::ffi`]: a CPU engine and stream, and a reorder primitive
//! between two strided memory descriptors, optionally with source scales.
//!
//! Every handle is destroyed when its owner drops, and every status that is not `dnnl_success`
//! becomes an [`Error::Dnnl`] naming the call.

use std::ffi::{c_int, c_void, CStr};
use std::ptr;

use crate::error::{Error, Result};
use crate::ffi;

/// Turns the status of `call` into a result.
fn check(call: &'static str, status: ffi::Status) -> Result<()> {
    match status {
        ffi::SUCCESS => Ok(()),
        status => Err(Error::Dnnl { call, status }),
    }
}

/// oneDNN's version, `major.minor.patch (hash)`; fails unless it is a v3 library, the API these
/// declarations were written for.
pub fn version() -> Result<String> {
    // SAFETY: `dnnl_version` takes no arguments and returns a pointer to a static structure.
    let v = unsafe { &*ffi::dnnl_version() };
    let hash = match v.hash.is_null() {
        true => String::new(),
        // SAFETY: a non-null `hash` is a NUL-terminated static string (`dnnl_common.h`).
        false => unsafe { CStr::from_ptr(v.hash) }
            .to_string_lossy()
            .into_owned(),
    };
    let text = format!("{}.{}.{} ({hash})", v.major, v.minor, v.patch);
    match v.major {
        3 => Ok(text),
        _ => Err(Error::Other(format!(
            "oneDNN {text}: this program declares the v3 C API (checked against v3.2)"
        ))),
    }
}

/// A CPU engine and an in-order stream on it.
pub struct Context {
    engine: ffi::Engine,
    stream: ffi::Stream,
}

impl Context {
    /// The first CPU engine and a stream with default flags.
    pub fn new() -> Result<Context> {
        let mut engine = ptr::null_mut();
        // SAFETY: `engine` is a valid place for the output handle.
        let status = unsafe { ffi::dnnl_engine_create(&mut engine, ffi::ENGINE_CPU, 0) };
        check("dnnl_engine_create", status)?;
        let mut stream = ptr::null_mut();
        // SAFETY: `engine` was just created; `stream` is a valid place for the output handle.
        let status =
            unsafe { ffi::dnnl_stream_create(&mut stream, engine, ffi::STREAM_DEFAULT_FLAGS) };
        if let Err(e) = check("dnnl_stream_create", status) {
            // SAFETY: the engine was created above and nothing else refers to it.
            unsafe { ffi::dnnl_engine_destroy(engine) };
            return Err(e);
        }
        Ok(Context { engine, stream })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: both handles were created in `new`; every primitive and memory object made on
        // them borrows the context, so none is left.
        unsafe {
            ffi::dnnl_stream_destroy(self.stream);
            ffi::dnnl_engine_destroy(self.engine);
        }
    }
}

/// One side of a reorder: a tensor of `dims` elements of `dtype` at `strides` (in elements), the
/// first element at the start of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strided {
    /// Extent of each dim.
    pub dims: Vec<i64>,
    /// Elements between consecutive indices of each dim.
    pub strides: Vec<i64>,
    /// The element type.
    pub dtype: ffi::DataType,
}

impl Strided {
    /// Bytes a buffer must hold: up to the last element (strides are not negative here).
    fn span_bytes(&self) -> usize {
        let last: i64 = self
            .dims
            .iter()
            .zip(&self.strides)
            .map(|(n, s)| (n - 1) * s)
            .sum();
        (last as usize + 1) * dtype_size(self.dtype)
    }
}

/// Bytes of an element of the oneDNN types this program uses.
fn dtype_size(dtype: ffi::DataType) -> usize {
    match dtype {
        ffi::S8 => 1,
        ffi::BF16 => 2,
        _ => 4,
    }
}

/// An owned `dnnl_memory_desc_t`.
struct MemoryDesc(ffi::MemoryDesc);

impl MemoryDesc {
    fn new(t: &Strided) -> Result<MemoryDesc> {
        if t.dims.len() > ffi::MAX_NDIMS || t.dims.len() != t.strides.len() {
            return Err(Error::Other(format!(
                "a oneDNN tensor of dims {:?}",
                t.dims
            )));
        }
        let (mut dims, mut strides): (ffi::Dims, ffi::Dims) = Default::default();
        dims[..t.dims.len()].copy_from_slice(&t.dims);
        strides[..t.strides.len()].copy_from_slice(&t.strides);
        let mut md = ptr::null_mut();
        // SAFETY: `dims` and `strides` are full `dnnl_dims_t` arrays of which the first `ndims`
        // entries are read; `md` is a valid place for the output handle.
        let status = unsafe {
            ffi::dnnl_memory_desc_create_with_strides(
                &mut md,
                t.dims.len() as c_int,
                dims.as_ptr(),
                t.dtype,
                strides.as_ptr(),
            )
        };
        check("dnnl_memory_desc_create_with_strides", status)?;
        Ok(MemoryDesc(md))
    }
}

impl Drop for MemoryDesc {
    fn drop(&mut self) {
        // SAFETY: created in `new`; primitives and memory objects keep their own copies.
        unsafe { ffi::dnnl_memory_desc_destroy(self.0) };
    }
}

/// An owned `dnnl_primitive_attr_t`.
struct Attr(ffi::PrimitiveAttr);

impl Attr {
    /// Attributes with source scales of correspondence mask `mask` (bit `i`: one scale per
    /// index of dim `i`), or the default attributes.
    fn with_src_scales(mask: Option<c_int>) -> Result<Attr> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid place for the output handle.
        check("dnnl_primitive_attr_create", unsafe {
            ffi::dnnl_primitive_attr_create(&mut raw)
        })?;
        let attr = Attr(raw);
        if let Some(mask) = mask {
            // SAFETY: `attr.0` was just created.
            let status =
                unsafe { ffi::dnnl_primitive_attr_set_scales_mask(attr.0, ffi::ARG_SRC, mask) };
            check("dnnl_primitive_attr_set_scales_mask", status)?;
        }
        Ok(attr)
    }
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: created in `with_src_scales`; a primitive descriptor keeps its own copy.
        unsafe { ffi::dnnl_primitive_attr_destroy(self.0) };
    }
}

/// An owned `dnnl_memory_t`.
struct Memory(ffi::Memory);

impl Memory {
    /// A memory object of descriptor `md` over the buffer at `data`.
    ///
    /// # Safety
    /// `data` must stay valid for the descriptor's span for as long as the object is used by a
    /// primitive.
    unsafe fn new(ctx: &Context, md: &MemoryDesc, data: *mut c_void) -> Result<Memory> {
        let mut raw = ptr::null_mut();
        // SAFETY: `md` and the engine are live handles; `raw` is a valid place for the output
        // handle; the caller keeps `data` valid while the object is used.
        let status = unsafe { ffi::dnnl_memory_create(&mut raw, md.0, ctx.engine, data) };
        check("dnnl_memory_create", status)?;
        Ok(Memory(raw))
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: created in `new`; destroying it leaves the user's buffer alone.
        unsafe { ffi::dnnl_memory_destroy(self.0) };
    }
}

/// Source scales kept alive beside the memory object that points into them.
struct Scales {
    /// Declared first, so dropped before the values it points to.
    memory: Memory,
    /// One scale per index of the masked dims; never changed after `memory` is made.
    _values: Vec<f32>,
}

/// Memory objects over the last pair of buffers a reorder ran on.
struct Bound {
    src: (usize, usize),
    dst: (usize, usize),
    src_memory: Memory,
    dst_memory: Memory,
}

/// A reorder primitive from one strided tensor to another, with optional source scales.
pub struct Reorder<'c> {
    ctx: &'c Context,
    primitive: ffi::Primitive,
    src_md: MemoryDesc,
    dst_md: MemoryDesc,
    src_bytes: usize,
    dst_bytes: usize,
    scales: Option<Scales>,
    bound: Option<Bound>,
    implementation: String,
}

impl<'c> Reorder<'c> {
    /// The reorder from `src` to `dst`; with `scales = Some((mask, values))`, every source
    /// element is multiplied by its scale (oneDNN v3's source scales; destination scales
    /// divide), the scale of an element being `values[i]` for `i` the row-major index of its
    /// coordinates in the dims of `mask`.
    ///
    /// Fails with status `dnnl_unimplemented` from `dnnl_reorder_primitive_desc_create` when
    /// oneDNN has no implementation for it.
    pub fn new(
        ctx: &'c Context,
        src: &Strided,
        dst: &Strided,
        scales: Option<(c_int, Vec<f32>)>,
    ) -> Result<Reorder<'c>> {
        let (src_md, dst_md) = (MemoryDesc::new(src)?, MemoryDesc::new(dst)?);
        let attr = Attr::with_src_scales(scales.as_ref().map(|s| s.0))?;
        let mut pd = ptr::null_mut();
        // SAFETY: the descriptors, the engine and the attributes are live handles; `pd` is a
        // valid place for the output handle.
        let status = unsafe {
            ffi::dnnl_reorder_primitive_desc_create(
                &mut pd, src_md.0, ctx.engine, dst_md.0, ctx.engine, attr.0,
            )
        };
        check("dnnl_reorder_primitive_desc_create", status)?;
        let made = primitive_of(pd);
        // SAFETY: `pd` was created above; the primitive holds what it needs of it.
        unsafe { ffi::dnnl_primitive_desc_destroy(pd) };
        let (primitive, implementation) = made?;
        let mut reorder = Reorder {
            ctx,
            primitive,
            src_md,
            dst_md,
            src_bytes: src.span_bytes(),
            dst_bytes: dst.span_bytes(),
            scales: None,
            bound: None,
            implementation,
        };
        if let Some((_, values)) = scales {
            reorder.scales = Some(reorder.scales_memory(values)?);
        }
        Ok(reorder)
    }

    /// The name of the implementation oneDNN chose (`dnnl_query_impl_info_str`), e.g. `jit:uni`.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// A 1-D f32 memory object over `values`, which it keeps.
    fn scales_memory(&self, values: Vec<f32>) -> Result<Scales> {
        let md = MemoryDesc::new(&Strided {
            dims: vec![values.len() as i64],
            strides: vec![1],
            dtype: ffi::F32,
        })?;
        // SAFETY: the vector's buffer holds `values.len()` f32 and moves with the vector
        // without being reallocated; `Scales` drops the memory object before the vector.
        let memory = unsafe { Memory::new(self.ctx, &md, values.as_ptr() as *mut c_void)? };
        Ok(Scales {
            memory,
            _values: values,
        })
    }

    /// Runs the reorder from `src` into `dst` and waits for it. The buffers must hold the
    /// tensors' spans, in bytes of the element types the reorder was made with.
    pub fn execute<S: Copy, D: Copy>(&mut self, src: &[S], dst: &mut [D]) -> Result<()> {
        let src_key = (src.as_ptr() as usize, std::mem::size_of_val(src));
        let dst_key = (dst.as_ptr() as usize, std::mem::size_of_val(dst));
        if src_key.1 < self.src_bytes || dst_key.1 < self.dst_bytes {
            return Err(Error::Other(format!(
                "buffers of {} and {} bytes for a reorder of {} into {} bytes",
                src_key.1, dst_key.1, self.src_bytes, self.dst_bytes
            )));
        }
        let bound = match self.bound.take() {
            Some(b) if (b.src, b.dst) == (src_key, dst_key) => b,
            _ => self.bind(src, dst)?,
        };
        let result = self.run(&bound);
        self.bound = Some(bound);
        result
    }

    /// Memory objects over `src` and `dst`, which `execute` checked are large enough.
    fn bind<S, D>(&self, src: &[S], dst: &mut [D]) -> Result<Bound> {
        let src_key = (src.as_ptr() as usize, std::mem::size_of_val(src));
        let dst_key = (dst.as_ptr() as usize, std::mem::size_of_val(dst));
        // SAFETY: the buffers hold the tensors' spans. The objects are only used by `run`,
        // called from `execute` with these same buffers borrowed (the key compared there is
        // their address and length), so the buffers are alive whenever the objects are used.
        let (src_memory, dst_memory) = unsafe {
            (
                Memory::new(self.ctx, &self.src_md, src.as_ptr() as *mut c_void)?,
                Memory::new(self.ctx, &self.dst_md, dst.as_mut_ptr() as *mut c_void)?,
            )
        };
        Ok(Bound {
            src: src_key,
            dst: dst_key,
            src_memory,
            dst_memory,
        })
    }

    /// Executes the primitive on the bound memory objects and waits.
    fn run(&self, bound: &Bound) -> Result<()> {
        let mut args = vec![
            ffi::ExecArg {
                arg: ffi::ARG_SRC,
                memory: bound.src_memory.0,
            },
            ffi::ExecArg {
                arg: ffi::ARG_DST,
                memory: bound.dst_memory.0,
            },
        ];
        if let Some(scales) = &self.scales {
            args.push(ffi::ExecArg {
                arg: ffi::ARG_ATTR_SCALES | ffi::ARG_SRC,
                memory: scales.memory.0,
            });
        }
        // SAFETY: the primitive, the stream and every memory object are live, and the memory
        // objects point into buffers `execute` borrows for the whole call (the source is only
        // read). The reorder writes nothing outside the destination's span.
        let status = unsafe {
            ffi::dnnl_primitive_execute(
                self.primitive,
                self.ctx.stream,
                args.len() as c_int,
                args.as_ptr(),
            )
        };
        check("dnnl_primitive_execute", status)?;
        // SAFETY: the stream is live.
        check("dnnl_stream_wait", unsafe {
            ffi::dnnl_stream_wait(self.ctx.stream)
        })
    }
}

impl Drop for Reorder<'_> {
    fn drop(&mut self) {
        // SAFETY: created in `new` and no longer executing (`run` waits for the stream).
        unsafe { ffi::dnnl_primitive_destroy(self.primitive) };
    }
}

/// The primitive of the descriptor `pd` and the name of its implementation.
fn primitive_of(pd: ffi::PrimitiveDesc) -> Result<(ffi::Primitive, String)> {
    let mut name: *const std::ffi::c_char = ptr::null();
    // SAFETY: `pd` is live; the query writes a `const char *` into `name`.
    let status = unsafe {
        ffi::dnnl_primitive_desc_query(
            pd,
            ffi::QUERY_IMPL_INFO_STR,
            0,
            &mut name as *mut _ as *mut c_void,
        )
    };
    check("dnnl_primitive_desc_query", status)?;
    let implementation = match name.is_null() {
        true => "?".to_string(),
        // SAFETY: a non-null answer is a NUL-terminated string owned by `pd`, copied here.
        false => unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned(),
    };
    let mut primitive = ptr::null_mut();
    // SAFETY: `pd` is live; `primitive` is a valid place for the output handle.
    check("dnnl_primitive_create", unsafe {
        ffi::dnnl_primitive_create(&mut primitive, pd)
    })?;
    Ok((primitive, implementation))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// oneDNN's f32 → s8 reorder of `xs`, viewed as `dims` at `src_strides`, into `dst_strides`,
    /// with source scales `scales` of correspondence mask `mask`.
    fn quantize(
        dims: &[i64],
        [src_strides, dst_strides]: [&[i64]; 2],
        (mask, scales): (c_int, &[f32]),
        xs: &[f32],
    ) -> Vec<i8> {
        let ctx = Context::new().expect("a CPU engine");
        let side = |strides: &[i64], dtype| Strided {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            dtype,
        };
        let (src, dst) = (side(src_strides, ffi::F32), side(dst_strides, ffi::S8));
        let mut reorder =
            Reorder::new(&ctx, &src, &dst, Some((mask, scales.to_vec()))).expect("a reorder");
        let mut out = vec![0i8; xs.len()];
        reorder.execute(xs, &mut out).expect("executes");
        out
    }

    #[test]
    fn source_scales_multiply_and_ties_round_to_even() {
        // A common scale (mask 0); every product is a tie but the saturated last two.
        let xs = [0.25f32, 0.75, 1.25, 1.75, -0.25, -1.25, 20.0, -20.0];
        let got = quantize(&[8], [&[1], &[1]], (0, &[10.0]), &xs);
        assert_eq!(got, [2, 8, 12, 18, -2, -12, 127, -128]);
    }

    #[test]
    fn per_row_scales_follow_the_row_major_index_of_the_masked_dims() {
        // 32 rows of 4 into 16 rows innermost: dims [2, 16, 4], rows (dims 0 and 1) scaled by
        // 2·(row + 1); every x is a quarter, so many products are ties.
        let (rows, cols) = (32, 4);
        let scales: Vec<f32> = (0..rows).map(|o| 2.0 * (o + 1) as f32).collect();
        let xs: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 7) as f32 * 0.25 - 0.75)
            .collect();
        let got = quantize(
            &[2, 16, cols as i64],
            [&[64, 4, 1], &[64, 1, 16]],
            (0b011, &scales),
            &xs,
        );
        for (o, i) in (0..rows).flat_map(|o| (0..cols).map(move |i| (o, i))) {
            let y = (xs[o * cols + i] * scales[o])
                .round_ties_even()
                .clamp(-128.0, 127.0);
            assert_eq!(
                got[(o / 16) * 16 * cols + i * 16 + o % 16],
                y as i8,
                "row {o}, col {i}"
            );
        }
    }
}
