//! `relayout cute OP LAYOUT [ARG]`, CuTe's layout algebra, and `relayout table LAYOUT`, CuTe's
//! and MoYe's `print_layout`.

use clap::{Args, Subcommand};
use relayout::algebra::{CuteLayout, IntTuple, Tiler};
use relayout::Error;

/// The operations of `relayout cute`, named as in CuTe. Layouts are CuTe or MoYe text:
/// `(4,2):(2,1)`, `(2, 3):(1, 8)`, `_8:_1`, or a bare shape `(3,4)` (column-major).
#[derive(Subcommand)]
#[command(rename_all = "snake_case")]
pub(crate) enum CuteOp {
    /// Merge modes that continue each other; with a PROFILE such as `(1,1)`, mode by mode.
    Coalesce {
        /// The layout.
        layout: String,
        /// A shape whose tuples say which modes to coalesce separately.
        profile: Option<String>,
    },
    /// A ∘ B: the layout of A(B(c)), with B's shape.
    Composition(TilerArgs),
    /// The increasing layout of what LAYOUT leaves out, up to COTARGET (default: its cosize).
    Complement {
        /// The layout.
        layout: String,
        /// An integer or a shape such as `(4,6)`.
        cotarget: Option<String>,
    },
    /// The layout R with LAYOUT(R(i)) = i, as large as possible.
    RightInverse {
        /// The layout.
        layout: String,
    },
    /// Split the layout into (tile, rest).
    LogicalDivide(TilerArgs),
    /// logical_divide as ((tiles), (rests)).
    ZippedDivide(TilerArgs),
    /// logical_divide as ((tiles), rest_0, rest_1, …).
    TiledDivide(TilerArgs),
    /// logical_divide as (tile_0, …, rest_0, …).
    FlatDivide(TilerArgs),
    /// Repeat the layout in the pattern of TILER: (layout, repeats).
    LogicalProduct(TilerArgs),
    /// logical_product as ((blocks), (repeats)).
    ZippedProduct(TilerArgs),
    /// logical_product as ((blocks), repeat_0, repeat_1, …).
    TiledProduct(TilerArgs),
    /// logical_product as (block_0, …, repeat_0, …).
    FlatProduct(TilerArgs),
    /// The layout as a block, repeated over TILER mode by mode: ((A0,B0),(A1,B1),…).
    BlockedProduct(PairArgs),
    /// The blocks interleaved: ((B0,A0),(B1,A1),…).
    RakedProduct(PairArgs),
}

#[derive(Args)]
pub(crate) struct TilerArgs {
    /// The layout.
    layout: String,
    /// A layout (`4:2`), an integer `n` (= n:1), a shape (`(3,4)`: one n:1 per mode), `_` (keep),
    /// or a tuple of those, one per mode: `[3:1;4:1]` or `<3:1, 4:1>`.
    tiler: String,
}

#[derive(Args)]
pub(crate) struct PairArgs {
    /// The block.
    layout: String,
    /// The layout the block is repeated over.
    tiler: String,
}

/// `relayout table` arguments.
#[derive(Args)]
pub(crate) struct TableArgs {
    /// A layout of rank 2, in CuTe or MoYe text.
    layout: String,
    /// Number rows, columns and offsets from 1 and print the layout in MoYe's form, as MoYe.jl's
    /// print_layout does.
    #[arg(long)]
    one_based: bool,
}

/// Runs `relayout cute OP …` and prints the result in CuTe notation.
pub(crate) fn cute(op: &CuteOp) -> Result<(), Box<dyn std::error::Error>> {
    outln!("{}", apply(op)?)?;
    Ok(())
}

/// Runs `relayout table …`.
pub(crate) fn table(args: &TableArgs) -> Result<(), Box<dyn std::error::Error>> {
    let table = CuteLayout::parse(&args.layout)?.table()?;
    if args.one_based {
        out!("{}", table.one_based())?;
    } else {
        out!("{table}")?;
    }
    Ok(())
}

fn apply(op: &CuteOp) -> Result<CuteLayout, Error> {
    let parse = CuteLayout::parse;
    let with_tiler = |args: &TilerArgs, op: fn(&CuteLayout, Tiler) -> Result<CuteLayout, Error>| {
        op(&parse(&args.layout)?, args.tiler.parse()?)
    };
    match op {
        CuteOp::Coalesce { layout, profile } => match profile {
            Some(p) => parse(layout)?.coalesce_by(&p.parse::<IntTuple>()?),
            None => Ok(parse(layout)?.coalesce()),
        },
        CuteOp::Complement { layout, cotarget } => match cotarget {
            Some(c) => parse(layout)?.complement(c.parse::<IntTuple>()?),
            None => parse(layout)?.complement_in_cosize(),
        },
        CuteOp::RightInverse { layout } => Ok(parse(layout)?.right_inverse()),
        CuteOp::Composition(args) => with_tiler(args, CuteLayout::composition),
        CuteOp::LogicalDivide(args) => with_tiler(args, CuteLayout::logical_divide),
        CuteOp::ZippedDivide(args) => with_tiler(args, CuteLayout::zipped_divide),
        CuteOp::TiledDivide(args) => with_tiler(args, CuteLayout::tiled_divide),
        CuteOp::FlatDivide(args) => with_tiler(args, CuteLayout::flat_divide),
        CuteOp::LogicalProduct(args) => with_tiler(args, CuteLayout::logical_product),
        CuteOp::ZippedProduct(args) => with_tiler(args, CuteLayout::zipped_product),
        CuteOp::TiledProduct(args) => with_tiler(args, CuteLayout::tiled_product),
        CuteOp::FlatProduct(args) => with_tiler(args, CuteLayout::flat_product),
        CuteOp::BlockedProduct(args) => parse(&args.layout)?.blocked_product(&parse(&args.tiler)?),
        CuteOp::RakedProduct(args) => parse(&args.layout)?.raked_product(&parse(&args.tiler)?),
    }
}
