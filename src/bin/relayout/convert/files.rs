//! The files of `relayout convert`: the source buffer, memory-mapped from a `.npy` or raw file,
//! and the destination, written into a memory-mapped temporary file beside its final path and
//! renamed over it only once it is complete.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};
use relayout::DType;
use tempfile::NamedTempFile;

use super::npy;

/// Longest `.npy` header read (NumPy's own are a few hundred bytes; version 2 allows 4 GiB).
const MAX_HEADER: usize = 1 << 20;

/// Whether a path names a `.npy` file (by its extension, in any case).
pub fn is_npy(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// The source file, opened, with its `.npy` header if it is one.
pub struct Input {
    path: PathBuf,
    file: File,
    len: u64,
    /// The header of a `.npy` file; `None` for raw data.
    pub header: Option<npy::Header>,
}

impl Input {
    /// Opens the file and reads its header if its name ends in `.npy`.
    pub fn open(path: &Path) -> Result<Input, String> {
        let fail = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
        let mut file = File::open(path).map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        if !meta.is_file() {
            return Err(format!(
                "cannot read {}: not a regular file",
                path.display()
            ));
        }
        let header = if is_npy(path) {
            let bad = |why: String| {
                format!(
                    "{} is not a .npy file relayout reads: {why}",
                    path.display()
                )
            };
            let mut prefix = vec![0u8; npy::PREFIX_LEN.min(meta.len() as usize)];
            file.read_exact(&mut prefix).map_err(fail)?;
            let total = npy::header_len(&prefix).map_err(bad)?;
            if total > MAX_HEADER || total as u64 > meta.len() {
                return Err(bad("its header is cut short".into()));
            }
            let mut bytes = prefix;
            bytes.resize(total, 0);
            let already = npy::PREFIX_LEN.min(total);
            if total > already {
                file.read_exact(&mut bytes[already..]).map_err(fail)?;
            }
            Some(npy::parse_header(&bytes[..total]).map_err(bad)?)
        } else {
            None
        };
        Ok(Input {
            path: path.to_path_buf(),
            file,
            len: meta.len(),
            header,
        })
    }

    /// The element type the file names, when it is a `.npy` file of a type relayout knows.
    pub fn named_dtype(&self) -> Result<Option<DType>, String> {
        let Some(h) = &self.header else {
            return Ok(None);
        };
        npy::dtype_of(&h.descr).map(Some).ok_or_else(|| {
            format!(
                "{} holds '{}' elements, which relayout does not move (it moves little-endian integers and floats of 1, 2, 4 and 8 bytes)",
                self.path.display(),
                h.descr
            )
        })
    }

    /// Checks that the file holds exactly `elements` elements of `dtype`: for `.npy`, its type,
    /// order, element count and data length; for raw data, its length.
    pub fn check(&self, dtype: DType, elements: usize) -> Result<(), String> {
        let path = self.path.display();
        let need = elements as u64 * dtype.size() as u64;
        let Some(h) = &self.header else {
            if self.len != need {
                return Err(format!(
                    "{path} holds {} bytes; the source layout needs {need} ({elements} {dtype} elements)",
                    self.len
                ));
            }
            return Ok(());
        };
        if !npy::descr_agrees(&h.descr, dtype) {
            return Err(format!(
                "element type mismatch: {path} holds '{}' elements, the relayout moves {dtype} (stored as '{}')",
                h.descr,
                npy::descr_of(dtype)
            ));
        }
        if !h.is_c_ordered() {
            return Err(format!(
                "{path} is in Fortran order; convert reads C-ordered arrays"
            ));
        }
        match h.elements() {
            Some(n) if n == elements => {}
            _ => {
                return Err(format!(
                "{path} holds an array of shape {:?}; the source layout needs {elements} elements",
                h.shape
            ))
            }
        }
        let have = self.len - h.data_offset as u64;
        if have < need {
            return Err(format!(
                "{path} is cut short: it holds {have} bytes of data where its shape needs {need}"
            ));
        }
        Ok(())
    }

    /// Bytes before the data: the `.npy` header, or none.
    pub fn data_offset(&self) -> usize {
        self.header.as_ref().map_or(0, |h| h.data_offset)
    }

    /// The bytes of the data, mapped into memory.
    pub fn map(&self) -> Result<Mmap, String> {
        // SAFETY: the map is only read (by the kernel, once); like any program that maps a file,
        // convert relies on no other process truncating or writing the file meanwhile.
        unsafe { Mmap::map(&self.file) }
            .map_err(|e| format!("cannot map {} into memory: {e}", self.path.display()))
    }
}

/// The destination: a temporary file beside the final path, mapped into memory.
pub struct Output {
    path: PathBuf,
    file: NamedTempFile,
    map: MmapMut,
    data_offset: usize,
}

impl Output {
    /// A temporary file of `header` then `data_bytes` zero bytes, in `path`'s directory.
    pub fn create(path: &Path, header: &[u8], data_bytes: usize) -> Result<Output, String> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut builder = tempfile::Builder::new();
        builder.prefix(".relayout-convert-").suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Less the umask, as for any new file (the default would be owner-only).
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let file = builder.tempfile_in(dir).map_err(fail)?;
        let total = header.len() + data_bytes;
        file.as_file().set_len(total as u64).map_err(fail)?;
        allocate(file.as_file(), total).map_err(fail)?;
        // SAFETY: the file was just created under a fresh name for this process; its bytes are
        // written through this map alone until it is renamed into place.
        let mut map = unsafe { MmapMut::map_mut(file.as_file()) }.map_err(fail)?;
        map[..header.len()].copy_from_slice(header);
        Ok(Output {
            path: path.to_path_buf(),
            file,
            map,
            data_offset: header.len(),
        })
    }

    /// The data bytes (after the header).
    pub fn data(&mut self) -> &mut [u8] {
        &mut self.map[self.data_offset..]
    }

    /// Writes the map back and renames the file into place.
    pub fn commit(self) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        self.map.flush_async().map_err(fail)?;
        drop(self.map);
        self.file
            .persist(&self.path)
            .map(drop)
            .map_err(|e| fail(e.error))
    }
}

/// Reserves the file's blocks, so that a full disk is an error here rather than a fault when
/// the map is written.
#[cfg(target_os = "linux")]
fn allocate(file: &File, len: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `posix_fallocate` only reads its arguments; the descriptor is open for writing.
    let err = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    match err {
        0 => Ok(()),
        // File systems that cannot reserve blocks: the file stays sparse.
        libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// Reserves the file's blocks where the system can (not here: the file stays sparse).
#[cfg(not(target_os = "linux"))]
fn allocate(_file: &File, _len: usize) -> std::io::Result<()> {
    Ok(())
}
