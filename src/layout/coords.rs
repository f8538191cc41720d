//! Walking every coordinate of a logical shape.

use std::ops::ControlFlow;

/// An iterator over every coordinate of a shape in row-major order (last dim fastest).
///
/// ```
/// use relayout::Coords;
/// let all: Vec<Vec<usize>> = Coords::new(&[2, 2]).collect();
/// assert_eq!(all, [[0, 0], [0, 1], [1, 0], [1, 1]]);
/// ```
#[derive(Debug, Clone)]
pub struct Coords {
    shape: Vec<usize>,
    next: Option<Vec<usize>>,
}

impl Coords {
    /// All coordinates of `shape`; none if an extent is 0, one (the empty coordinate) for rank 0.
    pub fn new(shape: &[usize]) -> Coords {
        let next = if shape.contains(&0) {
            None
        } else {
            Some(vec![0; shape.len()])
        };
        Coords {
            shape: shape.to_vec(),
            next,
        }
    }
}

impl Iterator for Coords {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let current = self.next.take()?;
        let mut following = current.clone();
        for d in (0..following.len()).rev() {
            following[d] += 1;
            if following[d] < self.shape[d] {
                self.next = Some(following);
                return Some(current);
            }
            following[d] = 0;
        }
        Some(current)
    }
}

/// Calls `f` with every coordinate of `shape` in row-major order, reusing one buffer (no
/// allocation per coordinate). Calls nothing if an extent is 0, and once for rank 0.
///
/// ```
/// let mut n = 0;
/// relayout::layout::for_each_coord(&[3, 4], |_| n += 1);
/// assert_eq!(n, 12);
/// ```
pub fn for_each_coord(shape: &[usize], mut f: impl FnMut(&[usize])) {
    let _ = try_for_each_coord::<()>(shape, |c| {
        f(c);
        ControlFlow::Continue(())
    });
}

/// [`for_each_coord`] until `f` breaks; returns what it broke with.
pub(crate) fn try_for_each_coord<B>(
    shape: &[usize],
    mut f: impl FnMut(&[usize]) -> ControlFlow<B>,
) -> ControlFlow<B> {
    if shape.contains(&0) {
        return ControlFlow::Continue(());
    }
    let mut coord = vec![0usize; shape.len()];
    loop {
        f(&coord)?;
        let mut d = shape.len();
        loop {
            if d == 0 {
                return ControlFlow::Continue(());
            }
            d -= 1;
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
}
