//! Routines the generated code calls: stores that bypass the cache (non-temporal stores) and
//! prefetches, which Cranelift cannot emit, copies of staged rows with ordinary stores (so that
//! a kernel's own code moves nothing and compiles fast), conversions of staged rows in vectors
//! wider than Cranelift's ([`RowConversion`]), and the register tiles of transposes
//! ([`BlockTranspose`]; some of them stream whole lines straight to the destination,
//! [`TileStores::Streamed`]), compiled once instead of into every kernel. Kernels for large
//! destinations finish a block of the destination in a small staging buffer (or read a
//! contiguous source run directly) and hand it to
//! [`StreamRows`], once per block, which writes it out with streaming stores.
//!
//! The routine runs once per block, and a block can be as small as four rows of one cache line
//! (NHWC → NCHW16c), so what it spends per row counts: a destination line that takes 7 cycles to
//! stream has no room for alignment arithmetic and `memcpy` calls for empty heads and tails. Rows
//! of whole, aligned cache lines (the usual case: staged runs and copies of whole lines) go
//! through a loop of loads and streaming stores alone; only other rows pay for heads and tails.
//! On a 2-core AMD EPYC (Zen 4) VM that took NHWC → NCHW16c from 9 to 24 GB/s.

mod hints;
mod rows;
mod stored;
mod transpose;

pub(crate) use rows::RowConversion;
pub(crate) use transpose::{BlockTranspose, TileStores};

/// A routine of the runtime that generated code calls, all of the streaming routine's
/// signature (two pointers and four integers) but those that ask ahead as they stream
/// ([`Routine::params`]). A kernel's module declares the ones its code calls, and only those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Routine {
    /// One of the routines of one kind of call per block or run.
    Core(CoreRoutine),
    /// The streaming routine of joined runs.
    Joined(JoinedEnds),
    /// A streaming routine, of joined runs or not, that asks for a later block's source rows
    /// as it goes ([`StreamAsking`]).
    Asking(StreamAsking),
    /// A block transpose.
    Transpose(BlockTranspose),
    /// A row conversion.
    Conversion(RowConversion),
}

impl Routine {
    /// The symbol under which the JIT module resolves it.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Routine::Core(r) => r.symbol(),
            Routine::Joined(j) => j.symbol(),
            Routine::Asking(a) => a.symbol(),
            Routine::Transpose(t) => t.symbol(),
            Routine::Conversion(c) => c.symbol(),
        }
    }

    /// Its address for this host, if the host has it (every routine but the row conversions,
    /// which need AVX2 on x86-64).
    pub(crate) fn address(self) -> Option<*const u8> {
        match self {
            Routine::Core(r) => Some(r.address()),
            Routine::Joined(j) => Some(j.routine()),
            Routine::Asking(a) => Some(a.routine()),
            Routine::Transpose(t) => Some(t.routine()),
            Routine::Conversion(c) => c.routine(),
        }
    }

    /// How many 64-bit parameters it takes: [`StreamAsking::PARAMS`] for the streaming routines
    /// that ask ahead, the streaming routine's six for every other.
    pub(crate) fn params(self) -> usize {
        match self {
            Routine::Asking(_) => StreamAsking::PARAMS,
            _ => ROWS_PARAMS,
        }
    }
}

/// How many 64-bit parameters [`RowsRoutine`]s take: two pointers and four integers.
pub(crate) const ROWS_PARAMS: usize = 6;

/// The runtime's routines of one kind of call per block or run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoreRoutine {
    /// Streams rows out ([`stream_rows_routine`]), each in order.
    StreamRows,
    /// Streams rows out, reading rows of two pages or more four pages side by side
    /// ([`stream_rows_side_by_side_routine`]).
    StreamRowsSideBySide,
    /// Asks for a later block's source rows ([`prefetch_rows_routine`]).
    PrefetchRows,
    /// Copies rows with ordinary stores ([`stored::store_rows_routine`]).
    StoreRows,
    /// Copies rows with ordinary stores, asking for lines ahead
    /// ([`stored::store_rows_ahead_routine`]).
    StoreRowsAhead,
    /// Asks for the lines ahead of destination rows to be written ([`ask_ahead_to_write`]).
    AskAheadToWrite,
}

impl CoreRoutine {
    /// Every core routine.
    #[cfg(test)]
    const ALL: [CoreRoutine; 6] = [
        CoreRoutine::StreamRows,
        CoreRoutine::StreamRowsSideBySide,
        CoreRoutine::PrefetchRows,
        CoreRoutine::StoreRows,
        CoreRoutine::StoreRowsAhead,
        CoreRoutine::AskAheadToWrite,
    ];

    /// The symbol under which the JIT module resolves it.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            CoreRoutine::StreamRows => "relayout_stream_rows",
            CoreRoutine::StreamRowsSideBySide => "relayout_stream_rows_side_by_side",
            CoreRoutine::PrefetchRows => "relayout_prefetch_rows",
            CoreRoutine::StoreRows => "relayout_store_rows",
            CoreRoutine::StoreRowsAhead => "relayout_store_rows_ahead",
            CoreRoutine::AskAheadToWrite => "relayout_ask_ahead_to_write",
        }
    }

    /// Its address for this host.
    pub(crate) fn address(self) -> *const u8 {
        match self {
            CoreRoutine::StreamRows => stream_rows_routine(),
            CoreRoutine::StreamRowsSideBySide => stream_rows_side_by_side_routine(),
            CoreRoutine::PrefetchRows => prefetch_rows_routine(),
            CoreRoutine::StoreRows => stored::store_rows_routine(),
            CoreRoutine::StoreRowsAhead => stored::store_rows_ahead_routine(),
            CoreRoutine::AskAheadToWrite => ask_ahead_to_write as *const u8,
        }
    }
}

/// The streaming routine for this host: [`StreamRows`] with its widest streaming stores
/// ([`widest`]), each row read in order.
fn stream_rows_routine() -> *const u8 {
    widest(PlainStream::InOrder)
}

/// The streaming routine for this host that reads rows of two pages or more four pages side by
/// side ([`stream_lines`]).
fn stream_rows_side_by_side_routine() -> *const u8 {
    widest(PlainStream::PagesSideBySide)
}

/// A streaming routine in a version for each width of streaming stores.
trait Streaming: Copy {
    /// The address of the version with `S`'s stores.
    fn address_with<S: Streamer>(self) -> *const u8;
}

/// The version of `routine` with 64-byte streaming stores where the CPU has AVX-512F, 32-byte
/// ones where it has AVX, 16-byte ones otherwise.
fn widest(routine: impl Streaming) -> *const u8 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return routine.address_with::<Avx512>();
        }
        if std::arch::is_x86_feature_detected!("avx") {
            return routine.address_with::<Avx>();
        }
    }
    routine.address_with::<Baseline>()
}

/// The plain streaming routines, [`StreamRows`] joining no ends: how they read long rows.
#[derive(Clone, Copy)]
enum PlainStream {
    /// Each row in order.
    InOrder,
    /// Rows of two pages or more [`PIECES_AT_ONCE`] pages side by side.
    PagesSideBySide,
}

impl Streaming for PlainStream {
    fn address_with<S: Streamer>(self) -> *const u8 {
        match self {
            PlainStream::InOrder => rows_routine::<StreamRows<S, false, false, false>> as *const u8,
            PlainStream::PagesSideBySide => {
                rows_routine::<StreamRows<S, false, false, true>> as *const u8
            }
        }
    }
}

/// The streaming routine of joined runs ([`TransposeWrite::Joined`]): which ends of its rows
/// it leaves to, or writes on into, the runs beside them. Every row must be whole lines long
/// where the routine writes on past its tail.
///
/// [`TransposeWrite::Joined`]: crate::plan::TransposeWrite::Joined
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinedEnds {
    /// Each row leaves the line it starts in to the run before it, and stores its part of the
    /// line it ends in.
    Head,
    /// Each row stores its part of the line it starts in, and streams the line it ends in
    /// whole, on into the bytes past it in the source (the staging buffer).
    Tail,
    /// Each row leaves the line it starts in and streams the line it ends in whole.
    Both,
}

impl JoinedEnds {
    /// Every joined routine.
    #[cfg(test)]
    const ALL: [JoinedEnds; 3] = [JoinedEnds::Head, JoinedEnds::Tail, JoinedEnds::Both];

    /// The routine of `join`, if it joins an end (else the plain [`StreamRows`] does).
    pub(crate) fn of(join: crate::plan::Join) -> Option<JoinedEnds> {
        use crate::plan::{RunHead, RunTail};
        match (join.head, join.tail) {
            (RunHead::Stored, RunTail::Stored) => None,
            (RunHead::Joined, RunTail::Stored) => Some(JoinedEnds::Head),
            (RunHead::Stored, RunTail::Joined { .. }) => Some(JoinedEnds::Tail),
            (RunHead::Joined, RunTail::Joined { .. }) => Some(JoinedEnds::Both),
        }
    }

    /// The symbol under which the JIT module resolves the routine.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            JoinedEnds::Head => "relayout_stream_rows_head_joined",
            JoinedEnds::Tail => "relayout_stream_rows_tail_joined",
            JoinedEnds::Both => "relayout_stream_rows_both_joined",
        }
    }

    /// The routine's address for this host, with the widest streaming stores it has
    /// ([`widest`]).
    pub(crate) fn routine(self) -> *const u8 {
        widest(self)
    }

    /// The routine with `S`'s streaming stores.
    fn with<S: Streamer>(self) -> RowsRoutine {
        match self {
            JoinedEnds::Head => rows_routine::<StreamRows<S, true, false, false>>,
            JoinedEnds::Tail => rows_routine::<StreamRows<S, false, true, false>>,
            JoinedEnds::Both => rows_routine::<StreamRows<S, true, true, false>>,
        }
    }
}

impl Streaming for JoinedEnds {
    fn address_with<S: Streamer>(self) -> *const u8 {
        self.with::<S>() as *const u8
    }
}

/// A streaming routine that, as it writes its rows out, asks the CPU for the source rows of a
/// later block into its L2 cache, a share of them before each row ([`AskAhead`]), where a
/// staged transpose would otherwise ask for them all at once ([`prefetch_rows`]) between
/// reading its block and writing it out. Asked for all at once, dozens of source rows
/// (64 rows of four lines each for a 16 KiB block of f32) go out as a burst that the CPU's
/// queue of misses cannot hold; asked for a row's share at a time, they overlap the streaming
/// stores. On a 2-core AMD EPYC (Zen 3) VM, pinned blocks in back-to-back runs: the 8192² f32
/// transpose in 256-byte runs of 16 KiB blocks went from 70–78 ms to 46–60 (memcpy of the
/// same bytes 24–30 ms), the 8000² f32 one in 512-byte runs across from 67–69 ms to 48–58;
/// `relayout bench --no-tune`, three alternating runs each, ratio to memcpy: 8000² f32
/// 0.38–0.47 to 0.52–0.55, 8000² u16 0.32–0.50 to 0.72–0.77, NHWC → NCHW 0.61–0.74 to
/// 0.78–0.84, the 256³ reversal 0.36–0.58 to 0.51–0.57, the rest level. A C model of the same
/// blocks showed the same: asking for the next block's rows all at once between reading and
/// writing ran no faster than not asking at all (94–99 ms against 98–103 for 8192²), a share
/// at a time 57–80 ms.
///
/// Its parameters ([`StreamAsking::PARAMS`]): the streaming routine's six, then the
/// prefetching routine's source address and `[rows, row bytes, stride, group]`
/// ([`prefetch_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StreamAsking {
    /// Which ends of its rows it joins to the runs beside them, if any ([`JoinedEnds`]).
    pub(crate) ends: Option<JoinedEnds>,
}

impl StreamAsking {
    /// How many 64-bit parameters the routine takes.
    pub(crate) const PARAMS: usize = ROWS_PARAMS + 5;

    /// Every such routine.
    #[cfg(test)]
    const ALL: [StreamAsking; 4] = [
        StreamAsking { ends: None },
        StreamAsking {
            ends: Some(JoinedEnds::Head),
        },
        StreamAsking {
            ends: Some(JoinedEnds::Tail),
        },
        StreamAsking {
            ends: Some(JoinedEnds::Both),
        },
    ];

    /// The symbol under which the JIT module resolves the routine.
    pub(crate) fn symbol(self) -> &'static str {
        match self.ends {
            None => "relayout_stream_rows_asking",
            Some(JoinedEnds::Head) => "relayout_stream_rows_head_joined_asking",
            Some(JoinedEnds::Tail) => "relayout_stream_rows_tail_joined_asking",
            Some(JoinedEnds::Both) => "relayout_stream_rows_both_joined_asking",
        }
    }

    /// The routine's address for this host, with the widest streaming stores it has
    /// ([`widest`]).
    pub(crate) fn routine(self) -> *const u8 {
        widest(self)
    }

    /// The routine with `S`'s streaming stores.
    fn with<S: Streamer>(self) -> AskingRoutine {
        match self.ends {
            None => stream_rows_asking::<S, false, false>,
            Some(JoinedEnds::Head) => stream_rows_asking::<S, true, false>,
            Some(JoinedEnds::Tail) => stream_rows_asking::<S, false, true>,
            Some(JoinedEnds::Both) => stream_rows_asking::<S, true, true>,
        }
    }
}

impl Streaming for StreamAsking {
    fn address_with<S: Streamer>(self) -> *const u8 {
        self.with::<S>() as *const u8
    }
}

/// The signature of the streaming routines that ask ahead ([`StreamAsking`]).
type AskingRoutine =
    unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64, *const u8, i64, i64, i64, i64);

/// [`StreamRows`] of the rows `[rows, row_bytes, src_stride, dst_stride]` from `src` to `dst`,
/// asking before each row for its share of the rows the prefetching routine would ask for when
/// called with `ask_at` and `[ask_rows, ask_row_bytes, ask_stride, ask_group]`.
///
/// # Safety
/// As [`StreamRows`] for its first six arguments; the rest are hints, any value allowed.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn stream_rows_asking<
    S: Streamer,
    const HEAD_JOINED: bool,
    const TAIL_JOINED: bool,
>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    dst_stride: i64,
    ask_at: *const u8,
    ask_rows: i64,
    ask_row_bytes: i64,
    ask_stride: i64,
    ask_group: i64,
) {
    let job = Rows::new(src, dst, [rows, row_bytes, src_stride, dst_stride]);
    let ahead = AskAhead::new(ask_at, [ask_rows, ask_row_bytes, ask_stride, ask_group]);
    // SAFETY: forwarded from the caller.
    unsafe { S::rows::<HEAD_JOINED, TAIL_JOINED, true, false>(job, ahead) }
}

/// The signature of [`StreamRows`] and the routines like it.
type RowsRoutine = unsafe extern "C" fn(*const u8, *mut u8, i64, i64, i64, i64);

/// One call's rows: `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart)
/// to `dst` (rows `dst_stride` bytes apart).
#[derive(Clone, Copy)]
struct Rows {
    src: *const u8,
    dst: *mut u8,
    rows: usize,
    row_bytes: usize,
    src_stride: isize,
    dst_stride: isize,
}

impl Rows {
    /// Whether the rows lie end to end in the destination (each `row_bytes` after the last,
    /// upwards), two or more of them, each at least a line long.
    fn end_to_end(&self) -> bool {
        self.rows > 1 && self.row_bytes >= LINE_BYTES && self.dst_stride == self.row_bytes as isize
    }

    /// These rows as one row where they are shorter than a line and lie end to end on both
    /// sides (each `row_bytes` after the last, upwards): the rows of a staged transpose into
    /// destination rows shorter than a line that follow one another (NCHW → NHWC with 8
    /// channels: 32-byte rows) then stream as one run of whole lines instead of row by row,
    /// each row's lines stored in part. Longer rows end to end keep their rows, which
    /// [`copy_rows_end_to_end`] streams whole lines at a time already, so that a routine that
    /// asks ahead still asks a share before each: merged too, NCHW → NHWC with 64 f32 channels
    /// (rows of 256 bytes) ran at 0.63–0.84 of memcpy against 0.68–1.04 on a 2-core AMD EPYC
    /// (Zen 4) VM (three alternating untuned suite runs of each build), no gain.
    fn merged(self) -> Rows {
        let row = self.row_bytes as isize;
        if !merges_rows_of(self.row_bytes) || self.src_stride != row {
            return self;
        }
        let (rows, row_bytes) = merged_rows(self.rows as i64, row as i64, self.dst_stride as i64);
        if rows as usize == self.rows {
            return self;
        }
        // One row: its strides are its length, so that whole lines take the fast loop.
        let row_bytes = row_bytes as usize;
        Rows {
            rows: 1,
            row_bytes,
            src_stride: row_bytes as isize,
            dst_stride: row_bytes as isize,
            ..self
        }
    }

    /// The job of a routine called with these pointers and `[rows, row length, src_stride,
    /// dst_stride]` (negative counts as none).
    fn new(src: *const u8, dst: *mut u8, [rows, len, src_stride, dst_stride]: [i64; 4]) -> Rows {
        Rows {
            src,
            dst,
            rows: rows.max(0) as usize,
            row_bytes: len.max(0) as usize,
            src_stride: src_stride as isize,
            dst_stride: dst_stride as isize,
        }
    }
}

/// Streaming stores of one width, and the loop over a call's rows compiled with the CPU
/// features they need.
trait Streamer {
    /// Bytes of one streaming store; destinations must be aligned to it.
    const WIDTH: usize;

    /// Copies `WIDTH` bytes from `src` to `dst` with one streaming store.
    ///
    /// # Safety
    /// `WIDTH` bytes readable at `src` and writable at `dst`, `dst` aligned to `WIDTH`, and the
    /// CPU has the implementation's features.
    unsafe fn stream(src: *const u8, dst: *mut u8);

    /// Copies every row of `job` as [`StreamRows`] says (through [`copy_rows`], compiled with
    /// the features [`Streamer::stream`] needs, so that it inlines), asking for `ahead`'s rows
    /// as it goes if `ASKS`.
    ///
    /// # Safety
    /// As [`StreamRows`], for `job`'s rows.
    unsafe fn rows<
        const HEAD_JOINED: bool,
        const TAIL_JOINED: bool,
        const ASKS: bool,
        const SIDE_BY_SIDE: bool,
    >(
        job: Rows,
        ahead: AskAhead,
    );
}

/// Copies `rows` rows of `row_bytes` bytes from `src` (rows `src_stride` bytes apart) to `dst`
/// (rows `dst_stride` bytes apart), with streaming stores for the whole cache lines of each
/// destination row and ordinary stores for the lines it covers in part. The stores are weakly
/// ordered: the caller runs [`fence`] before it lets anyone else read the destination.
///
/// Joined runs ([`JoinedEnds`]) leave or lend those lines instead: with `HEAD_JOINED`, each
/// row leaves the line it starts in (its head) unwritten, for the run before it to write
/// whole; with `TAIL_JOINED`, each row streams the line it ends in whole, on into the bytes
/// that follow it in the source, where it would store its part of that line (its tail).
///
/// # Safety
/// For every `r < rows`, the `row_bytes` bytes at `src + r·src_stride` must be readable, those at
/// `dst + r·dst_stride` writable, and the two must not overlap; the CPU must have the features
/// `S` uses ([`stream_rows_routine`] picks `S` by what the CPU has). With `TAIL_JOINED`, each
/// row is whole lines long, and the line's worth of bytes past each row is readable in the
/// source and, up to the end of the line the row ends in, writable in the destination (the
/// start of the next run along the row).
struct StreamRows<S, const HEAD_JOINED: bool, const TAIL_JOINED: bool, const SIDE_BY_SIDE: bool>(
    std::marker::PhantomData<S>,
);

impl<S: Streamer, const HEAD_JOINED: bool, const TAIL_JOINED: bool, const SIDE_BY_SIDE: bool>
    RowsJob for StreamRows<S, HEAD_JOINED, TAIL_JOINED, SIDE_BY_SIDE>
{
    unsafe fn run(job: Rows) {
        // SAFETY: forwarded from the caller.
        unsafe { S::rows::<HEAD_JOINED, TAIL_JOINED, false, SIDE_BY_SIDE>(job, AskAhead::NOTHING) }
    }
}

/// What a routine of the streaming routine's signature ([`RowsRoutine`]) does with one call's
/// rows.
trait RowsJob {
    /// Does it.
    ///
    /// # Safety
    /// As the implementation says.
    unsafe fn run(job: Rows);
}

/// The routine of `J`: its six arguments (the pointers, the rows, the row length and the two
/// strides) as one [`Rows`] job.
///
/// # Safety
/// As `J`'s.
unsafe extern "C" fn rows_routine<J: RowsJob>(
    src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    dst_stride: i64,
) {
    let job = Rows::new(src, dst, [rows, row_bytes, src_stride, dst_stride]);
    // SAFETY: forwarded from the caller.
    unsafe { J::run(job) }
}

/// Bytes of a cache line: this routine streams whole lines only.
const LINE_BYTES: usize = crate::target::HOST_LINE_BYTES;

/// Whether the streaming routines take rows of `row_bytes` that lie end to end on both sides as
/// one row ([`Rows::merged`]): rows shorter than a line.
pub(crate) const fn merges_rows_of(row_bytes: usize) -> bool {
    row_bytes < LINE_BYTES
}

/// Bytes of the pieces of a long row that [`stream_lines`] reads side by side: a page, the reach
/// of the hardware prefetchers, which follow a stream only within its page.
const PIECE_BYTES: usize = 4096;

/// Bytes of the shortest row [`stream_lines`] reads side by side (where asked to): two pages.
pub(crate) const SIDE_BY_SIDE_MIN_BYTES: usize = 2 * PIECE_BYTES;

/// How many pieces of a long row [`stream_lines`] reads side by side; staged zips and unzips
/// that read in pieces cut their runs into as many.
pub(crate) const PIECES_AT_ONCE: usize = 4;

/// Bytes [`stream_lines`] moves from one piece before it turns to the next (four lines), and
/// the source bytes staged zips and unzips read from one piece before they turn.
pub(crate) const CHUNK_BYTES: usize = 256;

/// [`Streamer::rows`]'s loop: rows of whole, aligned cache lines through [`stream_lines`],
/// nothing but loads and streaming stores (they have no heads or tails to leave or lend), any
/// other row through [`copy_row`], after the lines all the rows store in part are asked for
/// ([`prefetch_stored_lines`]); before each row, if `ASKS`, its share of `ahead`'s rows. Rows
/// that are not joined go first through [`Rows::merged`]: short rows end to end on both sides
/// are one row (and ask for all of `ahead`'s rows before it).
///
/// # Safety
/// As [`StreamRows`]; `S`'s features must be enabled where this is inlined.
#[inline(always)]
unsafe fn copy_rows<
    S: Streamer,
    const HEAD_JOINED: bool,
    const TAIL_JOINED: bool,
    const ASKS: bool,
    const SIDE_BY_SIDE: bool,
>(
    job: Rows,
    ahead: AskAhead,
) {
    if job.rows == 0 || job.row_bytes == 0 {
        // No bytes to move, and none the caller vouches for.
        if ASKS {
            ahead.ask_all();
        }
        return;
    }
    let job = match HEAD_JOINED || TAIL_JOINED {
        // Joined rows each leave or lend their own ends.
        true => job,
        false => job.merged(),
    };
    // Without `ASKS` (the plain streaming routines) nothing of the asking is compiled in.
    let shares = ASKS.then(|| ahead.in_shares(job.rows));
    let whole_lines = |x: usize| x.is_multiple_of(LINE_BYTES);
    let whole = whole_lines(job.dst as usize)
        && whole_lines(job.dst_stride.unsigned_abs())
        && whole_lines(job.row_bytes);
    if !whole && !HEAD_JOINED && !TAIL_JOINED && job.end_to_end() {
        // SAFETY: forwarded from the caller; the rows lie end to end in the destination.
        unsafe { copy_rows_end_to_end::<S>(job, shares) };
        return;
    }
    if !whole {
        for r in 0..job.rows as isize {
            let dst = job.dst.wrapping_offset(r * job.dst_stride);
            prefetch_stored_lines::<HEAD_JOINED, TAIL_JOINED>(dst, job.row_bytes);
        }
    }
    for r in 0..job.rows as isize {
        if let Some(shares) = shares {
            shares.ask(r as usize);
        }
        // SAFETY: row `r` of each side is inside the ranges the caller vouches for, and the
        // offsets fit in `isize` because they address memory that exists.
        let (src, dst) = unsafe {
            (
                job.src.offset(r * job.src_stride),
                job.dst.offset(r * job.dst_stride),
            )
        };
        if whole {
            // SAFETY: forwarded from the caller, for this row, which starts on a line of the
            // destination and is whole lines long.
            unsafe { stream_lines::<S, SIDE_BY_SIDE>(src, dst, job.row_bytes) };
        } else {
            // SAFETY: forwarded from the caller, for this row.
            unsafe { copy_row::<S, HEAD_JOINED, TAIL_JOINED>(src, dst, job.row_bytes) };
        }
    }
}

/// [`copy_rows`] of rows that lie end to end in the destination, each a line long or longer,
/// but not on whole lines: every line where one row ends and the next begins is put together
/// from the two rows' bytes and streamed whole, so that only the first row's head and the last
/// row's tail are stored in part. Row by row, each such line would be stored in part twice,
/// with ordinary stores that first read it from memory. A staged block of NCHW → NHWC (16
/// destination rows of 256 bytes, one after another) writes 4 KiB that way, where a buffer
/// that starts 16 bytes into a line (a `Vec` of more than 128 KiB from glibc's allocator, a
/// NumPy array) put every row across five lines, two of them shared.
///
/// # Safety
/// As [`StreamRows`] for `job`, which is not joined, and whose rows are at least a line long
/// and `row_bytes` apart in the destination ([`Rows::end_to_end`]); `S`'s features must be
/// enabled where this is inlined.
#[inline(always)]
unsafe fn copy_rows_end_to_end<S: Streamer>(job: Rows, shares: Option<Shares>) {
    let len = job.row_bytes;
    let last = job.rows - 1;
    let row = |r: usize| {
        let r = r as isize;
        (
            job.src.wrapping_offset(r * job.src_stride),
            job.dst.wrapping_offset(r * job.dst_stride),
        )
    };
    let (_, first_dst) = row(0);
    let (_, last_dst) = row(last);
    // Only the first row's head and the last row's tail are stored in part.
    prefetch_stored_lines::<false, true>(first_dst, len);
    prefetch_stored_lines::<true, false>(last_dst, len);
    for r in 0..job.rows {
        if let Some(shares) = shares {
            shares.ask(r);
        }
        let (src, dst) = row(r);
        let (_, body_end) = whole_lines_of(dst, len);
        // The row up to the line it shares with the next, which goes out with that row's head.
        let shares_line = r < last && body_end < len;
        let through = if shares_line { body_end } else { len };
        // SAFETY: forwarded from the caller for row `r`, or its first `body_end` bytes; a head
        // left alone is the line the row before streamed whole.
        unsafe {
            match r {
                0 => copy_row::<S, false, false>(src, dst, through),
                _ => copy_row::<S, true, false>(src, dst, through),
            }
        }
        if shares_line {
            let (next_src, _) = row(r + 1);
            // SAFETY: the line at `body_end` (aligned to the line) holds row `r`'s last
            // `len - body_end` bytes and row `r + 1`'s first `LINE_BYTES - (len - body_end)`,
            // its head, no longer than the row (`len ≥ LINE_BYTES`): bytes of the caller's rows.
            unsafe {
                stream_shared_line(
                    src.add(body_end),
                    len - body_end,
                    next_src,
                    dst.add(body_end),
                )
            };
        }
    }
}

/// Streams the line at `dst` whose first `tail` bytes (fewer than a line) come from `tail_src`
/// and the rest from `head_src`, 16 bytes at a time ([`Baseline`], whatever the row's
/// streamer): each piece straight from the side it lies in, the one piece that straddles the
/// two (where `tail` is not a multiple of 16) put together first. Put together in a buffer
/// and loaded from it whole (a line, or one store of a 64-byte streamer), the loads waited on
/// the smaller stores that filled it, which cannot be forwarded to them: end to end rows of
/// 64 bytes, 16 bytes past a line, streamed at half the speed of ordinary stores.
///
/// # Safety
/// `tail` bytes readable at `tail_src`, `LINE_BYTES - tail` at `head_src`, a line writable at
/// `dst` (aligned to the line).
#[inline(always)]
unsafe fn stream_shared_line(tail_src: *const u8, tail: usize, head_src: *const u8, dst: *mut u8) {
    type S = Baseline;
    for piece in (0..LINE_BYTES).step_by(S::WIDTH) {
        // SAFETY: each piece reads only the bytes of its side: below `tail` from `tail_src`,
        // from `tail` on from `head_src` (`piece - tail` and on, within `LINE_BYTES - tail`);
        // `dst + piece` is aligned to `WIDTH`, a divisor of the line; SSE2 is part of the
        // x86-64 baseline.
        unsafe {
            if piece + S::WIDTH <= tail {
                S::stream(tail_src.add(piece), dst.add(piece));
            } else if piece >= tail {
                S::stream(head_src.add(piece - tail), dst.add(piece));
            } else {
                let mut joined = [0u8; S::WIDTH];
                let part = tail - piece;
                std::ptr::copy_nonoverlapping(tail_src.add(piece), joined.as_mut_ptr(), part);
                std::ptr::copy_nonoverlapping(
                    head_src,
                    joined.as_mut_ptr().add(part),
                    S::WIDTH - part,
                );
                S::stream(joined.as_ptr(), dst.add(piece));
            }
        }
    }
}

/// A row of whole, aligned cache lines with loads and streaming stores alone: in order, or with
/// `SIDE_BY_SIDE`, a row of two pages or more read [`PIECES_AT_ONCE`] pages at a time,
/// [`CHUNK_BYTES`] from each in turn, as glibc's `memmove` does for its largest copies
/// (`large_memcpy_4x` in `memmove-vec-unaligned-erms.S`): one stream per page keeps the
/// prefetchers of several pages busy at once, where a single stream waits at every page
/// boundary. On a 2-core Intel Xeon VM (family 6, model 167), a C loop of streaming stores
/// copied 256 MiB at 9.5 GB/s straight through and at 12.3 four pages at a time in 256-byte
/// chunks (the same with the writes in order and only the reads interleaved; 10.8–11.9 two
/// pages at a time). On a 2-core AMD EPYC (Zen 3) VM the same C loops copied 64 MiB at
/// 7.1–8.8 GB/s in order wherever the destination lay against the source, and four pages at a
/// time at 8.2–10.4 where it lay 1–3.75 KiB past it modulo 4 KiB but at 4.2–7.0 where it lay
/// within 256 bytes of it (page-aligned buffers among them): the loads of each chunk wait on
/// the streaming stores just made to the same offset of the page before ("4K aliasing").
/// So the plain streaming routine reads in order, and reading side by side is a tactic of its
/// own ([`LargeWrites::StreamedInPieces`]) that tuning picks where it wins.
///
/// [`LargeWrites::StreamedInPieces`]: crate::plan::LargeWrites::StreamedInPieces
///
/// # Safety
/// `len` (a multiple of the line) bytes at `src` readable, at `dst` (aligned to the line)
/// writable, not overlapping; `S`'s features.
#[inline(always)]
unsafe fn stream_lines<S: Streamer, const SIDE_BY_SIDE: bool>(
    src: *const u8,
    dst: *mut u8,
    len: usize,
) {
    const { assert!(LINE_BYTES.is_multiple_of(S::WIDTH)) };
    const { assert!(CHUNK_BYTES.is_multiple_of(LINE_BYTES)) };
    const { assert!(PIECE_BYTES.is_multiple_of(CHUNK_BYTES)) };
    let mut done = 0;
    while SIDE_BY_SIDE && len - done >= SIDE_BY_SIDE_MIN_BYTES {
        let pieces = ((len - done) / PIECE_BYTES).min(PIECES_AT_ONCE);
        for chunk in (0..PIECE_BYTES).step_by(CHUNK_BYTES) {
            for piece in 0..pieces {
                let first = done + piece * PIECE_BYTES + chunk;
                for at in (first..first + CHUNK_BYTES).step_by(S::WIDTH) {
                    // SAFETY: `at + WIDTH ≤ done + pieces·PIECE_BYTES ≤ len`; `dst + at` is
                    // aligned to the line (`dst`, `done`, the piece and the chunk are multiples
                    // of it), so to `WIDTH`, which divides it; the caller's features.
                    unsafe { S::stream(src.add(at), dst.add(at)) };
                }
            }
        }
        done += pieces * PIECE_BYTES;
    }
    for at in (done..len).step_by(S::WIDTH) {
        // SAFETY: `at + WIDTH ≤ len` (both multiples of `WIDTH`), `dst + at` aligned to `WIDTH`
        // as above; the caller's features.
        unsafe { S::stream(src.add(at), dst.add(at)) };
    }
}

/// How a row of `len` bytes at `dst` lies on the destination's cache lines: the bytes before
/// its first whole line (its head) and the end of its last whole line, as offsets from `dst`.
/// The bytes from there to `len` are its tail.
fn whole_lines_of(dst: *const u8, len: usize) -> (usize, usize) {
    let head = dst.align_offset(LINE_BYTES).min(len);
    (head, head + (len - head) / LINE_BYTES * LINE_BYTES)
}

/// Asks for the lines a row of `len` bytes at `dst` covers in part and [`copy_row`] stores
/// into (its head's, unless `HEAD_JOINED`, and its tail's, unless `TAIL_JOINED`) for writing
/// (`prefetchw`). Those stores each need the line from memory first; asked for all of a call's
/// rows up front, the reads overlap one another and the streaming stores, where otherwise each
/// row's head and tail wait for memory in turn. On a 2-core Intel Xeon VM (family 6, model
/// 85), the 3001 × 5008 f32 transpose (rows of 12 004 bytes, so every 256-byte run of a staged
/// block starts inside a line) went from 0.38–0.39 of memcpy to 0.53–0.54, untuned.
fn prefetch_stored_lines<const HEAD_JOINED: bool, const TAIL_JOINED: bool>(
    dst: *mut u8,
    len: usize,
) {
    let (head, body_end) = whole_lines_of(dst, len);
    let ends = [
        (!HEAD_JOINED && head > 0).then_some(0),
        (!TAIL_JOINED && body_end < len).then_some(body_end),
    ];
    for at in ends.into_iter().flatten() {
        hints::ask(hints::Ask::Write, dst.wrapping_add(at));
    }
}

/// One row at any alignment: the whole cache lines it covers with streaming stores, the lines
/// it covers in part (at most one at each end) with ordinary stores. A line streamed in part
/// would go to memory as a partial write, and so would the stores of the next row or call to the
/// rest of it: on a 2-core AMD EPYC (Zen 4) VM, with 16-byte streaming stores up to those
/// lines, a destination 16 bytes past a line took NHWC → NCHW16c from 23 to 10 GB/s and odd/even
/// strips (4 KiB staged runs) from 17 to 11. A joined head is left alone; a joined tail's line
/// is streamed whole, from the source bytes past the row ([`StreamRows`]).
///
/// # Safety
/// `len` bytes at `src` readable, at `dst` writable, not overlapping; `S`'s features; with
/// `TAIL_JOINED`, `len` is whole lines and the bytes up to `len + LINE_BYTES` at `src` and up to
/// the end of the line the row ends in at `dst` are in the caller's ranges too.
#[inline(always)]
unsafe fn copy_row<S: Streamer, const HEAD_JOINED: bool, const TAIL_JOINED: bool>(
    src: *const u8,
    dst: *mut u8,
    len: usize,
) {
    let (head, body_end) = whole_lines_of(dst, len);
    // With a joined tail, the row is whole lines long, so the bytes from `body_end` to `len`
    // (if any) and on to `body_end + LINE_BYTES` are the line the tail lies in.
    let stream_end = if TAIL_JOINED && body_end < len {
        body_end + LINE_BYTES
    } else {
        body_end
    };
    // SAFETY: every access stays within the caller's ranges: `[0, len)` of both pointers
    // (`head ≤ body_end ≤ len`), and with `TAIL_JOINED` up to `stream_end`, which does not pass
    // `len + LINE_BYTES` at `src` nor the end of the line the row ends in at `dst`. The
    // streaming stores move whole `WIDTH` pieces (a divisor of the line) from `head` to
    // `stream_end`, at addresses aligned to the line and so to `WIDTH`; the loads accept any
    // alignment; the caller promises the features.
    unsafe {
        if !HEAD_JOINED && head > 0 {
            std::ptr::copy_nonoverlapping(src, dst, head);
        }
        let mut at = head;
        while at < stream_end {
            S::stream(src.add(at), dst.add(at));
            at += S::WIDTH;
        }
        if !TAIL_JOINED && body_end < len {
            std::ptr::copy_nonoverlapping(src.add(body_end), dst.add(body_end), len - body_end);
        }
    }
}

/// 16-byte streaming stores (SSE2), or ordinary copies on other architectures.
struct Baseline;

impl Streamer for Baseline {
    const WIDTH: usize = 16;

    #[cfg(target_arch = "x86_64")]
    unsafe fn stream(src: *const u8, dst: *mut u8) {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        // SAFETY: the caller's promise: 16 bytes at each side, `dst` aligned to 16; SSE2 is part
        // of the x86-64 baseline; the load accepts any alignment.
        unsafe { _mm_stream_si128(dst.cast::<__m128i>(), _mm_loadu_si128(src.cast())) }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn stream(src: *const u8, dst: *mut u8) {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, 16) }
    }

    unsafe fn rows<
        const HEAD_JOINED: bool,
        const TAIL_JOINED: bool,
        const ASKS: bool,
        const SIDE_BY_SIDE: bool,
    >(
        job: Rows,
        ahead: AskAhead,
    ) {
        // SAFETY: forwarded from the caller; no features beyond the baseline.
        unsafe { copy_rows::<Self, HEAD_JOINED, TAIL_JOINED, ASKS, SIDE_BY_SIDE>(job, ahead) }
    }
}

/// A [`Streamer`] of `$width`-byte streaming stores that needs the CPU feature `$feature`.
#[cfg(target_arch = "x86_64")]
macro_rules! wide_streamer {
    ($(#[$doc:meta])* $name:ident, $feature:literal, $width:literal,
     $vector:ident, $load:ident, $store:ident) => {
        $(#[$doc])*
        struct $name;

        impl Streamer for $name {
            const WIDTH: usize = $width;

            #[inline]
            #[target_feature(enable = $feature)]
            unsafe fn stream(src: *const u8, dst: *mut u8) {
                use std::arch::x86_64::{$load, $store, $vector};
                // SAFETY: the caller's promise: `WIDTH` bytes at each side, `dst` aligned to
                // `WIDTH`, and the feature; the load accepts any alignment.
                unsafe { $store(dst.cast::<$vector>(), $load(src.cast())) }
            }

            #[target_feature(enable = $feature)]
            unsafe fn rows<
                const HEAD_JOINED: bool,
                const TAIL_JOINED: bool,
                const ASKS: bool,
                const SIDE_BY_SIDE: bool,
            >(
                job: Rows,
                ahead: AskAhead,
            ) {
                // SAFETY: forwarded from the caller, who promises the feature (enabled here, so
                // `stream` inlines).
                unsafe {
                    copy_rows::<Self, HEAD_JOINED, TAIL_JOINED, ASKS, SIDE_BY_SIDE>(job, ahead)
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
wide_streamer!(
    /// 32-byte streaming stores (AVX).
    Avx, "avx", 32, __m256i, _mm256_loadu_si256, _mm256_stream_si256
);

#[cfg(target_arch = "x86_64")]
wide_streamer!(
    /// 64-byte streaming stores (AVX-512F): a whole cache line per store.
    Avx512, "avx512f", 64, __m512i, _mm512_loadu_si512, _mm512_stream_si512
);

/// [`prefetch_rows`]'s address.
///
/// A staged transpose calls it once per block, after it has read its own source and before it
/// writes its stage out, for the next block's source rows: the reads of the next block then
/// overlap the writes of this one, where otherwise each block would wait for memory on its
/// reads, then on its writes. Blocks that the streaming routine writes out ask through that
/// routine instead, a share of the rows before each row it writes ([`StreamAsking`]); this one
/// serves blocks copied out with ordinary stores or converted by a row routine.
fn prefetch_rows_routine() -> *const u8 {
    prefetch_rows as *const u8
}

/// Asks the CPU to bring every cache line of `rows` rows of `row_bytes` bytes at `src` (rows
/// `src_stride` bytes apart) into its L2 cache (`prefetcht1`). The last argument (the streaming
/// routine's destination stride) is how many blocks of `row_bytes` along each row one call
/// asks for at a time ([`Region::prefetch_group`], see [`grouped_row_bytes`]); the destination is
/// ignored. A prefetch reads nothing the program can see and never faults, so any address is
/// allowed.
///
/// [`Region::prefetch_group`]: crate::plan::Region::prefetch_group
///
/// Into L2, not L1: a block's source is as large as its stage, and prefetched into L1 it evicted
/// the stage the routine was about to write out. On a 2-core AMD EPYC (Zen 4) VM, the staged and
/// streamed candidates of NCHW f32 → NHWC bf16 ran at 5–6 GB/s with `prefetcht0`, 3.3–6 without
/// prefetches and 10–11.5 with `prefetcht1`; the 8000² f64 transpose went from 0.64–0.67 of
/// memcpy (`prefetcht0`) to 0.80–0.86, the 256³ reversal from 0.62–0.69 to 0.77–0.90.
extern "C" fn prefetch_rows(
    src: *const u8,
    _dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    src_stride: i64,
    group: i64,
) {
    AskAhead::new(src, [rows, row_bytes, src_stride, group]).ask_all();
}

/// Source rows to ask the CPU for into its L2 cache (`prefetcht1`): `rows` rows of `row_bytes`
/// bytes at `at`, `stride` bytes apart.
#[derive(Clone, Copy)]
struct AskAhead {
    at: *const u8,
    rows: usize,
    row_bytes: i64,
    stride: i64,
}

impl AskAhead {
    /// No rows.
    const NOTHING: AskAhead = AskAhead {
        at: std::ptr::null(),
        rows: 0,
        row_bytes: 0,
        stride: 0,
    };

    /// The rows [`prefetch_rows`] asks for when called with `at` and `[rows, row_bytes, stride,
    /// group]` (see [`grouped_row_bytes`]; negative counts as none).
    fn new(at: *const u8, [rows, row_bytes, stride, group]: [i64; 4]) -> AskAhead {
        match grouped_row_bytes(at as usize, row_bytes, group) {
            Some(row_bytes) => AskAhead {
                at,
                rows: rows.max(0) as usize,
                row_bytes,
                stride,
            },
            None => AskAhead::NOTHING,
        }
    }

    /// The rows cut into `parts` shares (at least one), to be asked for one by one.
    fn in_shares(self, parts: usize) -> Shares {
        Shares {
            ahead: self,
            per_share: self.rows.div_ceil(parts.max(1)),
        }
    }

    /// Asks for all the rows at once.
    fn ask_all(self) {
        self.in_shares(1).ask(0);
    }
}

/// The rows of an [`AskAhead`] in consecutive shares of `per_share` rows (the last ones
/// shorter or empty), which a streaming routine asks for one before each row it writes. The
/// share size is worked out once per call: a routine whose rows are a line or two long has no
/// time for a division per row.
#[derive(Clone, Copy)]
struct Shares {
    ahead: AskAhead,
    per_share: usize,
}

impl Shares {
    /// Asks for share `part` (nothing past the last).
    #[inline(always)]
    fn ask(self, part: usize) {
        if self.per_share == 0 {
            return;
        }
        let AskAhead {
            at,
            rows,
            row_bytes,
            stride,
        } = self.ahead;
        let share = share_of_rows(rows, self.per_share, part);
        if share.is_empty() {
            return;
        }
        let at = at.wrapping_offset((share.start as isize).wrapping_mul(stride as isize));
        ask_rows(
            hints::Ask::ReadIntoL2,
            at,
            share.len() as i64,
            row_bytes,
            stride,
        );
    }
}

/// Share `part` of `rows` rows in consecutive shares of `per_share` rows: together the shares
/// hold every row once.
fn share_of_rows(rows: usize, per_share: usize, part: usize) -> std::ops::Range<usize> {
    let first = part.saturating_mul(per_share).min(rows);
    first..first + per_share.min(rows - first)
}

/// How many bytes of each row a call of the prefetching routine for the block at `at` asks
/// for, when its calls come for blocks of `row_bytes` that continue one another along the
/// rows and ask `group` blocks at a time: every block where fewer than two (`row_bytes`), or
/// the group's bytes where the block is the first of a group and nothing (`None`) elsewhere. A
/// group begins where `at` is a multiple of `row_bytes` by an index that `group` divides, so
/// that one of every `group` consecutive blocks asks, whatever the buffer's alignment. Groups
/// count as at most [`Blocking::MAX_PREFETCH_GROUP`] blocks.
///
/// [`Blocking::MAX_PREFETCH_GROUP`]: crate::plan::Blocking::MAX_PREFETCH_GROUP
fn grouped_row_bytes(at: usize, row_bytes: i64, group: i64) -> Option<i64> {
    if group <= 1 || row_bytes <= 0 {
        return Some(row_bytes);
    }
    let group = group.min(crate::plan::Blocking::MAX_PREFETCH_GROUP as i64);
    let index = at / row_bytes as usize;
    index
        .is_multiple_of(group as usize)
        .then(|| row_bytes.saturating_mul(group))
}

/// Asks the CPU for every cache line of `rows` rows of `row_bytes` bytes that start
/// [`hints::AHEAD_BYTES`] past `dst` (rows `dst_stride` bytes apart), to be written
/// (`prefetchw`): the lines that stores along those rows reach a little later
/// ([`ZipWrite::Prefetched`]). The source and its stride are ignored. A prefetch reads nothing
/// the program can see and never faults, so any address is allowed, past the destination too.
///
/// [`ZipWrite::Prefetched`]: crate::plan::ZipWrite::Prefetched
extern "C" fn ask_ahead_to_write(
    _src: *const u8,
    dst: *mut u8,
    rows: i64,
    row_bytes: i64,
    _src_stride: i64,
    dst_stride: i64,
) {
    let ahead = dst.wrapping_add(hints::AHEAD_BYTES);
    ask_rows(hints::Ask::Write, ahead, rows, row_bytes, dst_stride);
}

/// Asks, as `what` says, for every cache line of `rows` rows of `row_bytes` bytes at `at`,
/// rows `stride` bytes apart (none for a count below one; any address, as hints never fault).
fn ask_rows(what: hints::Ask, at: *const u8, rows: i64, row_bytes: i64, stride: i64) {
    for line in asked_lines(at, rows, row_bytes, stride) {
        hints::ask(what, line);
    }
}

/// The line starts [`ask_rows`] asks for, in order: those of each row of [`merged_rows`].
fn asked_lines(
    at: *const u8,
    rows: i64,
    row_bytes: i64,
    stride: i64,
) -> impl Iterator<Item = *const u8> {
    let (rows, row_bytes) = merged_rows(rows, row_bytes, stride);
    (0..rows.max(0) as isize).flat_map(move |r| {
        let row = at.wrapping_offset(r.wrapping_mul(stride as isize));
        lines_of(row, row_bytes.max(0) as usize).map(move |line| row.wrapping_offset(line))
    })
}

/// `rows` rows of `row_bytes` bytes, `stride` bytes apart, as [`ask_rows`] walks them: rows that
/// follow one another without a gap as one row of them all, whose lines it asks for once each
/// (once in each call: a streaming routine that asks share by share asks again for a line
/// that two shares split).
///
/// Row by row, a block of short source rows read whole, as in NHWC → NCHW with few channels
/// (128 rows of 32 or 48 bytes for 8 or 12 f32 channels), asked for each line one to three times
/// in a loop turn per row; asking each line once, still row by row, gained nothing in two runs
/// of `relayout bench`, and merged rows did: on a 2-core AMD EPYC (Zen 4) VM, untuned kernels of
/// NHWC → NCHW of 36.8 MiB in 16 images (224² pixels with 12 channels, as many bytes with 8, 16
/// and 64; the builds before and after alternating in one process, three processes) ran
/// 1.22–1.36 times as fast this way with 8 channels, 1.17–1.35 with 12, 1.01–1.05 with 16 and
/// 0.97–1.01 with 64.
fn merged_rows(rows: i64, row_bytes: i64, stride: i64) -> (i64, i64) {
    if rows > 1 && row_bytes > 0 && stride == row_bytes {
        (1, rows.saturating_mul(row_bytes))
    } else {
        (rows, row_bytes)
    }
}

/// The start of every cache line that `len` bytes at `row` touch, as offsets from `row`: from
/// the line `row` lies in (at or before it), so a row that starts inside a line has one more
/// line than its length in lines. Rows of odd-length source rows (a 3001 × 4999 f32 transpose
/// reads 128 bytes of rows 19 996 bytes apart) mostly start inside one: their last line went
/// unasked, and their blocks waited on it.
fn lines_of(row: *const u8, len: usize) -> impl Iterator<Item = isize> {
    let skew = if len == 0 {
        0
    } else {
        row as usize % LINE_BYTES
    };
    (-(skew as isize)..len as isize).step_by(LINE_BYTES)
}

/// Orders this thread's streaming stores before everything that follows (`mfence` on x86-64).
pub(crate) fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetches_of_any_address_do_not_fault() {
        // The page at 0 is never mapped, and rows going down from it wrap around the address
        // space; the kernels ask for the block after their last one, past the buffer.
        prefetch_rows(std::ptr::null(), std::ptr::null_mut(), 4, 256, 4096, 0);
        prefetch_rows(std::ptr::null(), std::ptr::null_mut(), 4, 256, -4096, 0);
        let buffer = [0u8; 64];
        let past = buffer.as_ptr().wrapping_add(1 << 30);
        prefetch_rows(past, std::ptr::null_mut(), 16, 1024, 1 << 20, 0);
        // Nothing to ask for.
        prefetch_rows(past, std::ptr::null_mut(), -1, -1, 0, 0);
        // Rows that start inside a line, at the bottom and the top of the address space.
        let odd = std::ptr::null::<u8>().wrapping_add(4);
        prefetch_rows(odd, std::ptr::null_mut(), 2, 300, -8, 0);
        // Groups of blocks, at the top of the address space and of absurd sizes.
        let top = std::ptr::null::<u8>().wrapping_sub(256);
        prefetch_rows(top, std::ptr::null_mut(), 4, 128, 1 << 20, 8);
        prefetch_rows(std::ptr::null(), std::ptr::null_mut(), 2, 128, 64, i64::MAX);
        // Asked ahead for writing: the same, on the destination's side.
        let top = std::ptr::null_mut::<u8>().wrapping_sub(1024);
        ask_ahead_to_write(std::ptr::null(), top, 3, 300, 0, 4096);
        ask_ahead_to_write(std::ptr::null(), std::ptr::null_mut(), 4, 256, 0, -4096);
        ask_ahead_to_write(std::ptr::null(), past.cast_mut(), -1, -1, 0, 0);
        prefetch_stored_lines::<false, false>(odd.cast_mut(), 300);
        prefetch_stored_lines::<false, false>(odd.wrapping_sub(100).cast_mut(), 300);
    }

    /// Consecutive blocks ask for their group once, from its first block, whatever the
    /// buffer's alignment; groups of one (or none) ask for each block's own bytes.
    #[test]
    fn one_block_of_each_group_asks_for_the_group() {
        for base in [0usize, 4, 100, 4096 + 64] {
            let asks: Vec<(usize, i64)> = (0..32)
                .filter_map(|i| {
                    let at = base + 128 * i;
                    grouped_row_bytes(at, 128, 8).map(|bytes| (i, bytes))
                })
                .collect();
            assert_eq!(asks.len(), 4, "{base}");
            assert!(asks.iter().all(|&(_, bytes)| bytes == 1024));
            assert!(asks.windows(2).all(|w| w[1].0 - w[0].0 == 8), "{asks:?}");
        }
        for group in [-1, 0, 1] {
            assert_eq!(grouped_row_bytes(300, 128, group), Some(128));
        }
        assert_eq!(grouped_row_bytes(300, 0, 8), Some(0));
        assert_eq!(grouped_row_bytes(0, i64::MAX, 8), Some(i64::MAX));
        assert_eq!(grouped_row_bytes(0, 128, i64::MAX), Some(128 * 64));
    }

    /// The shares of rows that a streaming routine asks for, one before each of its rows,
    /// together ask for every row once, in order; however many rows each side has.
    #[test]
    fn shares_of_rows_hold_every_row_once() {
        for rows in 0..40 {
            for parts in 0..50 {
                let ahead = AskAhead {
                    rows,
                    ..AskAhead::NOTHING
                };
                let per_share = ahead.in_shares(parts).per_share;
                let mut next = 0;
                for part in 0..parts.max(1) + 2 {
                    let share = share_of_rows(rows, per_share, part);
                    if !share.is_empty() {
                        assert_eq!(share.start, next, "{rows} rows in {parts}: part {part}");
                        next = share.end;
                    }
                }
                assert_eq!(next, rows, "{rows} rows in {parts}");
                assert!(share_of_rows(rows, per_share, usize::MAX).is_empty());
            }
        }
    }

    /// The host's streaming routines that ask as they go stream with its widest stores, as the
    /// plain ones do.
    #[test]
    fn the_host_asks_as_it_streams_with_its_widest_stores() {
        for a in StreamAsking::ALL {
            #[allow(unused_mut)]
            let mut widest = a.with::<Baseline>() as *const u8;
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512f") {
                widest = a.with::<Avx512>() as *const u8;
            } else if std::arch::is_x86_feature_detected!("avx") {
                widest = a.with::<Avx>() as *const u8;
            }
            assert_eq!(a.routine(), widest, "{a:?}");
        }
    }

    /// Every routine generated code may call resolves under a symbol of its own; the core
    /// routines to routines of their own.
    #[test]
    fn routines_resolve_under_distinct_symbols() {
        let routines: Vec<Routine> = (CoreRoutine::ALL.map(Routine::Core).into_iter())
            .chain(JoinedEnds::ALL.map(Routine::Joined))
            .chain(StreamAsking::ALL.map(Routine::Asking))
            .chain(BlockTranspose::ALL.map(Routine::Transpose))
            .chain(RowConversion::ALL.map(Routine::Conversion))
            .collect();
        assert_eq!(routines.len(), 6 + 3 + 4 + 16 + 2);
        for (i, r) in routines.iter().enumerate() {
            for other in &routines[i + 1..] {
                assert_ne!(r.symbol(), other.symbol());
                if let (Routine::Core(a), Routine::Core(b)) = (r, other) {
                    assert_ne!(a.address(), b.address());
                }
            }
        }
    }

    /// A row asks for exactly the lines it touches: each once, from the one it starts in.
    #[test]
    fn a_row_asks_for_every_line_it_touches_once() {
        let buffer = [0u8; 512];
        let base = buffer
            .as_ptr()
            .wrapping_add(buffer.as_ptr().align_offset(LINE_BYTES));
        for skew in 0..LINE_BYTES {
            let row = base.wrapping_add(skew);
            for len in [0, 1, LINE_BYTES - skew, LINE_BYTES, 128, 200, 256] {
                let lines: Vec<usize> = lines_of(row, len)
                    .map(|at| row.wrapping_offset(at) as usize)
                    .collect();
                let touched: Vec<usize> = (0..len)
                    .map(|i| (row as usize + i) / LINE_BYTES * LINE_BYTES)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                assert_eq!(lines, touched, "skew {skew} len {len}");
            }
        }
    }

    /// Rows that follow one another without a gap are asked for line by line, each line once,
    /// where row by row a line two rows share was asked for twice; the set of lines stays the
    /// same, and rows with gaps are walked row by row as before.
    #[test]
    fn rows_without_gaps_are_asked_for_line_by_line_once_each() {
        // Every row's lines, row by row, as the walk went before rows were merged.
        let row_by_row = |at: usize, rows: i64, row_bytes: i64, stride: i64| -> Vec<usize> {
            (0..rows.max(0) as usize)
                .flat_map(|r| {
                    let row = at.wrapping_add_signed(r as isize * stride as isize);
                    lines_of(row as *const u8, row_bytes.max(0) as usize)
                        .map(move |l| row.wrapping_add_signed(l))
                })
                .collect()
        };
        let asked = |at: usize, rows: i64, row_bytes: i64, stride: i64| -> Vec<usize> {
            asked_lines(at as *const u8, rows, row_bytes, stride)
                .map(|p| p as usize)
                .collect()
        };
        for (rows, row_bytes) in [(128, 32), (128, 48), (7, 12), (3, 100), (2, 64), (5, 128)] {
            for at in [4096, 4096 + 16, 4096 + 40] {
                let lines = asked(at, rows, row_bytes, row_bytes);
                let mut once = row_by_row(at, rows, row_bytes, row_bytes);
                once.dedup();
                assert_eq!(lines, once, "{rows} rows of {row_bytes} bytes at {at}");
                assert!(lines.windows(2).all(|w| w[1] == w[0] + LINE_BYTES));
            }
        }
        // Rows with gaps, rows going down, and rows of no bytes: row by row, as before.
        for (rows, row_bytes, stride) in [
            (128, 32, 48),
            (4, 64, 4096),
            (4, 64, -64),
            (4, -64, -64),
            (4, 0, 0),
            (1, 32, 32),
            (0, 32, 32),
        ] {
            assert_eq!(
                asked(8192 + 16, rows, row_bytes, stride),
                row_by_row(8192 + 16, rows, row_bytes, stride),
                "{rows} rows of {row_bytes} bytes {stride} apart"
            );
        }
    }

    /// A row's head is what lies before its first whole line, and its whole lines end where
    /// fewer than a line of it is left.
    #[test]
    fn whole_lines_of_a_row_start_and_end_on_lines() {
        let buffer = [0u8; 512];
        let base = buffer
            .as_ptr()
            .wrapping_add(buffer.as_ptr().align_offset(LINE_BYTES));
        for skew in 0..LINE_BYTES {
            let row = base.wrapping_add(skew);
            for len in [0, 1, 63, 64, 65, 200, 256] {
                let (head, body_end) = whole_lines_of(row, len);
                assert!(head <= body_end && body_end <= len);
                assert_eq!(head, ((LINE_BYTES - skew) % LINE_BYTES).min(len));
                assert!((row as usize + body_end).is_multiple_of(LINE_BYTES) || body_end == head);
                assert!(len - body_end < LINE_BYTES);
            }
        }
    }

    /// One call of `routine`: `rows` rows of `row_bytes` bytes, `gap` bytes apart in `src` and
    /// `stride` bytes apart (`±gap`) in a destination whose lowest row starts `offset` bytes
    /// past a cache line (`offset < 64`). Every byte lands where it belongs and nothing else
    /// changes.
    fn check_rows(
        routine: RowsRoutine,
        src: &[u8],
        rows: usize,
        row_bytes: usize,
        stride: i64,
        offset: usize,
    ) {
        check_rows_from(
            routine,
            src,
            stride.unsigned_abs() as usize,
            rows,
            row_bytes,
            stride,
            offset,
        );
    }

    /// [`check_rows`] with the source rows `src_gap` bytes apart.
    fn check_rows_from(
        routine: RowsRoutine,
        src: &[u8],
        src_gap: usize,
        rows: usize,
        row_bytes: usize,
        stride: i64,
        offset: usize,
    ) {
        let gap = stride.unsigned_abs() as usize;
        assert!(offset < 64 && row_bytes <= gap.min(src_gap));
        assert!(rows * src_gap <= src.len());
        let mut dst = vec![0xEEu8; rows * gap + 128];
        let offset = dst.as_ptr().align_offset(LINE_BYTES) + offset;
        // The first row's start: the lowest row when rows go up, the highest when they go down.
        let first = offset + if stride < 0 { (rows - 1) * gap } else { 0 };
        // SAFETY: `rows` rows of `row_bytes` ≤ `gap` bytes, `gap` bytes apart in `src` (at least
        // `rows·gap` bytes, asserted) and in `dst` from `offset` < 128 (`rows·gap + 128`
        // bytes); distinct allocations. The routines under test are the baseline one and those the CPU
        // has the features of.
        unsafe {
            routine(
                src.as_ptr(),
                dst.as_mut_ptr().add(first),
                rows as i64,
                row_bytes as i64,
                src_gap as i64,
                stride,
            )
        };
        fence();
        for (i, &got) in dst.iter().enumerate() {
            let at = i.wrapping_sub(offset);
            let (slot, col) = (at / gap, at % gap);
            let row = if stride < 0 {
                (rows - 1).wrapping_sub(slot)
            } else {
                slot
            };
            let inside = i >= offset && row < rows && col < row_bytes;
            let want = if inside {
                src[row * src_gap + col]
            } else {
                0xEE
            };
            assert_eq!(
                got, want,
                "stride {stride} offset {offset} row bytes {row_bytes} byte {i}"
            );
        }
    }

    /// `S`'s streaming routine that asks as it goes ([`stream_rows_asking`]), behind the plain
    /// routine's signature: it asks for rows between its own source rows, and rows a GiB past
    /// them, as kernels ask for blocks past their buffers.
    unsafe extern "C" fn asking<S: Streamer, const HEAD_JOINED: bool, const TAIL_JOINED: bool>(
        src: *const u8,
        dst: *mut u8,
        rows: i64,
        row_bytes: i64,
        src_stride: i64,
        dst_stride: i64,
    ) {
        let near = src.wrapping_add(32);
        let far = src.wrapping_add(1 << 30);
        // SAFETY: the caller's promise for the first six arguments; the rest are hints.
        unsafe {
            stream_rows_asking::<S, HEAD_JOINED, TAIL_JOINED>(
                src, dst, rows, row_bytes, src_stride, dst_stride, near, rows, 64, src_stride, 1,
            );
            stream_rows_asking::<S, HEAD_JOINED, TAIL_JOINED>(
                src,
                dst,
                rows,
                row_bytes,
                src_stride,
                dst_stride,
                far,
                3 * rows + 1,
                row_bytes + 100,
                -src_stride,
                8,
            );
        }
    }

    /// The streaming routine of `ends` that asks as it goes with `S`'s stores, behind the
    /// plain routine's signature ([`asking`]).
    fn asking_with<S: Streamer>(ends: Option<JoinedEnds>) -> RowsRoutine {
        match ends {
            None => asking::<S, false, false>,
            Some(JoinedEnds::Head) => asking::<S, true, false>,
            Some(JoinedEnds::Tail) => asking::<S, false, true>,
            Some(JoinedEnds::Both) => asking::<S, true, true>,
        }
    }

    /// `check` on the plain routines (reading in order and side by side) and the one that asks
    /// as it goes, of the baseline width and of the CPU's features; and on the host's.
    fn for_each_routine(check: impl Fn(RowsRoutine)) {
        fn of_width<S: Streamer>(check: &impl Fn(RowsRoutine)) {
            check(rows_routine::<StreamRows<S, false, false, false>>);
            check(rows_routine::<StreamRows<S, false, false, true>>);
            check(asking_with::<S>(None));
        }
        of_width::<Baseline>(&check);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            of_width::<Avx>(&check);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            of_width::<Avx512>(&check);
        }
        for host in [stream_rows_routine(), stream_rows_side_by_side_routine()] {
            // SAFETY: the host's routines are functions of this signature (what the JIT calls).
            check(unsafe { std::mem::transmute::<*const u8, RowsRoutine>(host) });
        }
    }

    /// The routines of `joined`: the baseline one, those of the CPU's features, and the host's;
    /// and those of each that ask as they go.
    fn joined_routines(joined: JoinedEnds) -> Vec<RowsRoutine> {
        let mut routines = vec![
            joined.with::<Baseline>(),
            asking_with::<Baseline>(Some(joined)),
        ];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            routines.extend([joined.with::<Avx>(), asking_with::<Avx>(Some(joined))]);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            routines.extend([joined.with::<Avx512>(), asking_with::<Avx512>(Some(joined))]);
        }
        // SAFETY: the host's routine is a function of this signature (what the JIT calls).
        routines.push(unsafe { std::mem::transmute::<*const u8, RowsRoutine>(joined.routine()) });
        routines
    }

    /// The joined routines, on rows 200 bytes apart in the destination at every offset within
    /// a line: a joined head leaves the bytes before the row's first whole line alone, a joined
    /// tail streams on to the end of the line the row ends in, from the source bytes past the
    /// row; every other byte of the row lands where it belongs, and nothing else changes.
    #[test]
    fn joined_rows_leave_their_heads_and_lend_their_tails() {
        const ROWS: usize = 3;
        const STRIDE: usize = 600;
        for joined in JoinedEnds::ALL {
            let (head_joined, tail_joined) = match joined {
                JoinedEnds::Head => (true, false),
                JoinedEnds::Tail => (false, true),
                JoinedEnds::Both => (true, true),
            };
            // Rows whose tails join are whole lines long.
            let lengths: &[usize] = if tail_joined {
                &[64, 128, 256, 512]
            } else {
                &[1, 64, 100, 128, 300, 512]
            };
            for &len in lengths {
                let gap = len + LINE_BYTES;
                let src: Vec<u8> = (0..ROWS * gap).map(|i| (i * 7 % 251) as u8).collect();
                for (routine, offset) in joined_routines(joined)
                    .into_iter()
                    .flat_map(|r| (0..LINE_BYTES).map(move |o| (r, o)))
                {
                    let mut dst = vec![0xEEu8; ROWS * STRIDE + 2 * LINE_BYTES];
                    let start = dst.as_ptr().align_offset(LINE_BYTES) + offset;
                    // SAFETY: `ROWS` rows of `len` bytes `gap` bytes apart in `src`, each with a
                    // line's worth past it; in `dst`, rows `STRIDE` bytes apart from `start`
                    // (< 128), each with the line it ends in inside the buffer (`STRIDE ≥ len +
                    // LINE_BYTES`); distinct allocations; the host's features.
                    unsafe {
                        routine(
                            src.as_ptr(),
                            dst.as_mut_ptr().add(start),
                            ROWS as i64,
                            len as i64,
                            gap as i64,
                            STRIDE as i64,
                        )
                    };
                    fence();
                    let mut want = vec![0xEEu8; dst.len()];
                    for r in 0..ROWS {
                        let at = start + r * STRIDE;
                        let (head, body_end) = whole_lines_of(dst.as_ptr().wrapping_add(at), len);
                        let from = if head_joined { head } else { 0 };
                        let to = if tail_joined && body_end < len {
                            body_end + LINE_BYTES
                        } else {
                            len
                        };
                        want[at + from..at + to]
                            .copy_from_slice(&src[r * gap + from..r * gap + to]);
                    }
                    assert!(
                        dst == want,
                        "{joined:?}, rows of {len} bytes, offset {offset}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_end_to_end_on_both_sides_merge_into_one() {
        let rows = |rows, row_bytes, src_stride, dst_stride| {
            let (src, dst) = (std::ptr::null(), std::ptr::null_mut());
            let job = Rows::new(src, dst, [rows, row_bytes, src_stride, dst_stride]).merged();
            (job.rows, job.row_bytes)
        };
        // 64 destination rows of 32 bytes from a stage that holds them end to end too.
        assert_eq!(rows(64, 32, 32, 32), (1, 2048));
        // Rows of a line or more keep their rows (and their shares of asking ahead).
        assert_eq!(rows(16, 256, 256, 256), (16, 256));
        // A gap on either side, rows going down, or a single row: as they are.
        assert_eq!(rows(64, 32, 48, 32), (64, 32));
        assert_eq!(rows(64, 32, 32, 48), (64, 32));
        assert_eq!(rows(64, 32, -32, -32), (64, 32));
        assert_eq!(rows(1, 32, 32, 32), (1, 32));
    }

    #[test]
    fn rows_end_to_end_land_where_they_belong_at_any_alignment() {
        // Rows one after another in the destination, whose lines where rows meet are put
        // together from both (copy_rows_end_to_end), from source rows apart or end to end too
        // (then one row), rows shorter than a line among them.
        let src: Vec<u8> = (0..12_000).map(|i| (i * 11 % 251) as u8).collect();
        for_each_routine(|routine| {
            for row_bytes in [4, 20, 32, 48, 64, 65, 72, 77, 100, 128, 130, 200, 256] {
                for src_gap in [row_bytes, 300] {
                    for offset in 0..64 {
                        let stride = row_bytes as i64;
                        for rows in [2, 5, 40] {
                            check_rows_from(
                                routine, &src, src_gap, rows, row_bytes, stride, offset,
                            );
                        }
                    }
                }
            }
        });
    }

    /// Three rows of every length up to past two 64-byte stores, at every destination offset
    /// within 64 bytes, rows a multiple of 64 bytes apart (up or down, where whole aligned rows
    /// take the fast loop) or not.
    #[test]
    fn rows_land_where_they_belong_at_any_alignment() {
        let src: Vec<u8> = (0..400).map(|i| (i * 7 % 251) as u8).collect();
        let lengths = [0, 1, 15, 16, 17, 31, 32, 33, 48, 64, 77, 96, 100, 110, 128];
        for_each_routine(|routine| {
            for stride in [110i64, 128, -128] {
                for offset in 0..64 {
                    for row_bytes in lengths
                        .into_iter()
                        .filter(|&l| l as u64 <= stride.unsigned_abs())
                    {
                        check_rows(routine, &src, 3, row_bytes, stride, offset);
                    }
                }
            }
        });
    }

    /// Two rows of whole lines, each from shorter than two pages to past five, rows a line
    /// more than their length apart (up and down): read page by page side by side where they
    /// start on a line, with ordinary stores at their ends where they start 16 bytes past one.
    #[test]
    fn long_rows_read_page_by_page_land_where_they_belong() {
        const PAGE: usize = PIECE_BYTES;
        let lengths = [
            2 * PAGE - 64,
            2 * PAGE,
            2 * PAGE + 64,
            3 * PAGE + 192,
            4 * PAGE,
            5 * PAGE + 4032,
        ];
        for_each_routine(|routine| {
            for row_bytes in lengths {
                let gap = row_bytes + LINE_BYTES;
                let src: Vec<u8> = (0..2 * gap).map(|i| (i * 13 % 251) as u8).collect();
                for stride in [gap as i64, -(gap as i64)] {
                    for offset in [0, 16] {
                        check_rows(routine, &src, 2, row_bytes, stride, offset);
                    }
                }
            }
        });
    }
}
