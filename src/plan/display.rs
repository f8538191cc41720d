//! A plan as text: a readable loop nest, one region after another, the way schedule printouts
//! show loops (what `relayout plan` prints).

use std::fmt;

use super::ir::{
    CopyWrite, Flush, IndexedSwizzle, Join, Kernel, LongReads, Loop, OffsetTerm, Packed, Plan,
    Region, RunHead, RunTail, TransposeWrite, UnzipWrite, Walk, ZipWrite, ASK_GROUPS,
};

impl fmt::Display for Plan {
    /// The loop nest as text, one region after another.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.conversion, self.packed) {
            (Some(c), _) => write!(f, "plan: {c} elements, converted in registers")?,
            (None, Some(p)) => write!(
                f,
                "plan: {}-bit elements, {} to a byte",
                p.bits(),
                p.per_byte()
            )?,
            (None, None) => write!(f, "plan: {}-byte elements", self.elem_size)?,
        }
        if let Some(map) = &self.per_index {
            write!(f, " {map}")?;
        }
        writeln!(
            f,
            ", src {} elements, dst {} elements, {} region(s), work {}",
            self.src_len,
            self.dst_len,
            self.regions.len(),
            self.work()
        )?;
        if let Some(blocking) = self.blocking() {
            writeln!(f, "transpose blocking: {blocking}")?;
        }
        for (i, region) in self.regions.iter().enumerate() {
            write!(
                f,
                "region {i}: src at {}, dst at {}",
                region.src_base, region.dst_base
            )?;
            if self.per_index.is_some() {
                write!(f, ", index at {}", region.index_base)?;
            }
            writeln!(f)?;
            Nest { f, indent: 1 }.region(self, region)?;
        }
        Ok(())
    }
}

/// Lines of one region, each indented by its depth in the nest.
struct Nest<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    indent: usize,
}

impl Nest<'_, '_> {
    fn line(&mut self, text: fmt::Arguments) -> fmt::Result {
        writeln!(self.f, "{}{text}", "  ".repeat(self.indent))
    }

    /// A loop line; what follows goes one level deeper.
    fn open(&mut self, l: Loop) -> fmt::Result {
        let index = match l.index_stride {
            0 => String::new(),
            i => format!(", index += {i}"),
        };
        self.line(format_args!(
            "for {} (src += {}, dst += {}{index})",
            l.extent, l.src_stride, l.dst_stride
        ))?;
        self.indent += 1;
        Ok(())
    }

    fn region(&mut self, plan: &Plan, region: &Region) -> fmt::Result {
        if let Some(ix) = &region.indexed {
            let show = |terms: &[OffsetTerm], swizzle: Option<IndexedSwizzle>| {
                let mut parts: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
                match swizzle {
                    Some(s) => {
                        if s.base != 0 || parts.is_empty() {
                            parts.push(s.base.to_string());
                        }
                        format!("{}({})", s.swizzle, parts.join(" + "))
                    }
                    None if parts.is_empty() => "0".to_string(),
                    None => parts.join(" + "),
                }
            };
            self.line(format_args!(
                "for x in {:?} (indexed: src += {}, dst += {})",
                ix.extents,
                show(&ix.src, ix.src_swizzle),
                show(&ix.dst, ix.dst_swizzle)
            ))?;
            self.indent += 1;
        }
        for &l in &region.loops {
            self.open(l)?;
        }
        let staged = |how: &str, runs: usize, joins: &str| {
            let bytes = plan.region_stage_bytes(region).unwrap_or(0);
            let prefetch = match region.kernel {
                _ if !region.prefetches() => String::new(),
                Kernel::Transpose { tile, .. } if tile.prefetch_ahead > 1 => {
                    format!(
                        ", the source {} blocks ahead prefetched{},",
                        tile.prefetch_ahead,
                        grouped(region.prefetch_group())
                    )
                }
                _ => format!(
                    ", the next block's source prefetched{},",
                    grouped(region.prefetch_group())
                ),
            };
            let run_bytes = match region.kernel {
                Kernel::Transpose { tile, .. } => tile.b.extent * plan.dst_elem_size(),
                Kernel::Unzip {
                    tile,
                    write: UnzipWrite::JoinedStrips(_),
                } => tile.long.extent * plan.dst_elem_size(),
                _ => bytes / runs.max(1),
            };
            format!(
                "staged in a {bytes}-byte buffer{prefetch} {how} out as {runs} run(s) of {run_bytes} bytes{joins}:"
            )
        };
        let flushed = |flush: Flush| match flush {
            Flush::Streamed => "streamed",
            Flush::Copied => "copied",
        };
        match region.kernel {
            Kernel::Copy {
                write: CopyWrite::Streamed { rows, .. } | CopyWrite::Prefetched { rows },
                ..
            } if rows.extent > 1 => self.open(rows)?,
            Kernel::Zip {
                write: ZipWrite::StreamedRun { steps, pieces },
                ..
            }
            | Kernel::Unzip {
                write: UnzipWrite::StreamedRun { steps, pieces },
                ..
            } => {
                self.line(format_args!("{}", staged("streamed", 1, "")))?;
                if pieces > 1 {
                    self.line(format_args!(
                        "read as {pieces} pieces side by side, a few lines of each in turn:"
                    ))?;
                }
                self.open(steps)?;
            }
            Kernel::Zip {
                write: ZipWrite::StreamedTile,
                ..
            } => self.line(format_args!("{}", staged("streamed", 1, "")))?,
            Kernel::Unzip {
                tile,
                write: UnzipWrite::StreamedStrips,
            } => self.line(format_args!(
                "{}",
                staged("streamed", tile.short.extent, "")
            ))?,
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Staged(flush),
            } => {
                // The streaming routine takes the runs of some lengths that lie end to end on
                // both sides as one (a staged transpose's lie end to end in the stage).
                let (a, b) = (tile.a, tile.b);
                let size = plan.dst_elem_size();
                let end_to_end = flush == Flush::Streamed
                    && plan.conversion.is_none()
                    && a.extent > 1
                    && a.dst_stride == b.extent as i64
                    && crate::runtime::merges_rows_of(b.extent * size);
                let one_run = match end_to_end {
                    true => format!(
                        ", end to end: one run of {} bytes",
                        a.extent * b.extent * size
                    ),
                    false => String::new(),
                };
                self.line(format_args!(
                    "{}",
                    staged(flushed(flush), a.extent, &one_run)
                ))?
            }
            Kernel::Transpose {
                tile,
                write: TransposeWrite::Joined(join),
            } => self.line(format_args!(
                "{}",
                staged("streamed", tile.a.extent, &joins(join))
            ))?,
            Kernel::Unzip {
                tile,
                write: UnzipWrite::JoinedStrips(join),
            } => self.line(format_args!(
                "{}",
                staged("streamed", tile.short.extent, &joins(join))
            ))?,
            _ => {}
        }
        self.kernel(plan, region.kernel)
    }

    fn kernel(&mut self, plan: &Plan, kernel: Kernel) -> fmt::Result {
        let elem_size = plan.elem_size;
        match kernel {
            Kernel::Element => self.line(format_args!("move 1 element")),
            Kernel::Copy { len, write, .. } => {
                let how = match write {
                    CopyWrite::Streamed {
                        reads: LongReads::InOrder,
                        ..
                    } => "streaming stores".to_string(),
                    CopyWrite::Streamed {
                        reads: LongReads::PagesSideBySide,
                        ..
                    } => "streaming stores, long rows read four pages side by side".to_string(),
                    CopyWrite::Prefetched { .. } => {
                        "stores, lines asked for ahead".to_string()
                    }
                    CopyWrite::Stored => format!("{}-byte vectors", plan.target.vector_bytes),
                };
                self.line(format_args!(
                    "copy {len} contiguous elements ({} bytes, {how})",
                    len * elem_size
                ))
            }
            Kernel::Transpose { tile, write } => {
                let (a, b, lanes) = (tile.a, tile.b, tile.lanes);
                let walk = match tile.walk {
                    Walk::Across => " across source rows",
                    Walk::Along => "",
                };
                let stores = match write {
                    TransposeWrite::Streamed => ", streaming whole lines",
                    TransposeWrite::Prefetched => ", lines asked for ahead",
                    TransposeWrite::InPlace
                    | TransposeWrite::Staged(_)
                    | TransposeWrite::Joined(_) => "",
                };
                let tiles = match plan.packed {
                    Some(_) => {
                        let (along_a, along_b) = Packed::TRANSPOSE_TILE;
                        format!("{along_a}x{along_b} nibble-pair")
                    }
                    None => format!("{lanes}x{lanes} register"),
                };
                self.line(format_args!(
                    "transpose {tiles} tiles{walk}{stores}: a {} (src += 1, dst += {}) x b {} (src += {}, dst += 1)",
                    a.extent, a.dst_stride, b.extent, b.src_stride
                ))
            }
            Kernel::Zip { tile, write } => self.line(format_args!(
                "zip {} strips of {} in registers ({} lanes): strips at src += {}, interleaved into dst{}",
                tile.short.extent,
                tile.long.extent,
                tile.lanes,
                tile.short.src_stride,
                asking(write == ZipWrite::Prefetched),
            )),
            Kernel::Unzip { tile, write } => self.line(format_args!(
                "unzip {} interleaved strips of {} in registers ({} lanes): strips to dst += {}{}",
                tile.short.extent,
                tile.long.extent,
                tile.lanes,
                tile.short.dst_stride,
                asking(write == UnzipWrite::Prefetched),
            )),
        }
    }
}

/// What a joined transpose's or unzip's line says of how its runs meet those beside them.
fn joins(join: Join) -> String {
    let head = match join.head {
        RunHead::Stored => None,
        RunHead::Joined => Some(
            "each from its first whole line (the run before writes the line it starts in)"
                .to_string(),
        ),
    };
    let tail = match join.tail {
        RunTail::Stored => None,
        RunTail::Joined { extension } => Some(format!(
            "each on to the end of the line the next run starts in ({extension} more elements read)"
        )),
    };
    match [head, tail].into_iter().flatten().collect::<Vec<_>>() {
        ends if ends.is_empty() => String::new(),
        ends => format!(", joined: {}", ends.join(", ")),
    }
}

/// What a staged transpose's line says of prefetching `group` blocks at a time
/// ([`Region::prefetch_group`]).
fn grouped(group: usize) -> String {
    match group {
        1 => String::new(),
        n => format!(" {n} blocks at a time"),
    }
}

/// What a zip's or unzip's line says of asking ahead ([`ZipWrite::Prefetched`]).
fn asking(asks: bool) -> String {
    match asks {
        true => format!(", lines asked for ahead every {ASK_GROUPS} groups"),
        false => String::new(),
    }
}

impl fmt::Display for OffsetTerm {
    /// The term as an expression over the indexed dims `x0, x1, …`, written as a layout digit is
    /// (`stride*(x1/4%2)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.digit())
    }
}
