//! Red-black successive over-relaxation (SOR) for Laplace's equation on a square grid, split into row blocks.
//!
//! Seed `000_e8004e1596fde6a5.txt` §4.1.2: the Mixed workload's parallel job is "a SOR kernel, a
//! two-dimensional Laplace's equation solver on a 128×128 element matrix".
//!
//! ## Problem
//! A row-block decomposition must give the same numbers whatever the rank count, so a run on 2, 3 or 7 ranks
//! can be checked against the serial result bit for bit.
//!
//! ## Approach
//! Red-black ordering: a point is red when `(row + column)` is even. A red update reads only black neighbours
//! and a black update only red ones, so each half-sweep is order-independent; ranks exchange their edge rows
//! (halos) before each half-sweep. The checksum sums per-row values in global row order, so even the
//! floating-point additions happen in the same order on any decomposition.
//!
//! ## Terminology
//! - `grid` — cells per side, boundary included; `u[i][j]`, `0 ≤ i, j < grid`.
//! - boundary — row 0 is held at 1.0, the other three edges at 0.0; interior rows `1 ..= grid-2` are solved.
//! - `omega` — the over-relaxation factor, `0 < omega < 2`.
//! - block — the interior rows `[first, first + rows)` of one rank, stored with one halo row above and below.
//!
//! ## Algorithm
//! ```text
//! iteration:  exchange halos; sweep(red); exchange halos; sweep(black)
//! sweep(c):   for interior (i, j) with (i + j) % 2 == c:
//!                 u[i][j] += omega × ((u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1]) / 4 − u[i][j])
//! checksum:   exchange halos; per row i: (Σ_j r[i][j]², Σ_j u[i][j]) with r = 4-neighbour sum − 4u;
//!             residual_norm = sqrt(Σ_i Σ_j r²), grid_sum = Σ_i Σ_j u, summed in row order
//! ```

use serde::Serialize;

/// Smallest grid with an interior: 3 × 3.
pub const MIN_GRID: usize = 3;
/// Largest grid: a halo row of 4096 × 8 bytes = 32 KiB fits in any TCP socket buffer, so ranks can send
/// their halos before receiving without deadlock.
pub const MAX_GRID: usize = 4096;
/// The value held on the top edge.
pub const TOP_EDGE: f64 = 1.0;

/// The interior rows `[first, first + rows)` of rank `rank` of `ranks` on a `grid`-sided grid: the
/// `grid - 2` interior rows dealt out as evenly as possible, lower ranks first.
pub fn partition(grid: usize, ranks: usize, rank: usize) -> (usize, usize) {
    let interior = grid - 2;
    let (base, extra) = (interior / ranks, interior % ranks);
    let rows = base + usize::from(rank < extra);
    let first = 1 + rank * base + rank.min(extra);
    (first, rows)
}

/// The final numbers of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Checksum {
    pub residual_norm: f64,
    pub grid_sum: f64,
}

impl Checksum {
    /// Combine per-row `(Σ r², Σ u)` pairs given in global row order.
    pub fn from_rows(rows: &[(f64, f64)]) -> Checksum {
        let (mut residual2, mut sum) = (0.0, 0.0);
        for &(r2, u) in rows {
            residual2 += r2;
            sum += u;
        }
        Checksum {
            residual_norm: residual2.sqrt(),
            grid_sum: sum,
        }
    }

    /// Both values' bit patterns, for exact comparison in text.
    pub fn hex(&self) -> String {
        format!(
            "{:016x}-{:016x}",
            self.residual_norm.to_bits(),
            self.grid_sum.to_bits()
        )
    }
}

/// One rank's rows with their halos.
#[derive(Clone, Debug)]
pub struct Block {
    pub grid: usize,
    /// Global index of the first own row.
    pub first: usize,
    pub rows: usize,
    /// `(rows + 2) × grid` values; local row 0 is the halo above, local row `rows + 1` the halo below.
    cells: Vec<f64>,
}

impl Block {
    /// The initial block: zero inside, the fixed boundary values in place (including a halo that is the top
    /// edge).
    pub fn new(grid: usize, first: usize, rows: usize) -> Block {
        let mut cells = vec![0.0; (rows + 2) * grid];
        if first == 1 {
            cells[..grid].fill(TOP_EDGE);
        }
        Block {
            grid,
            first,
            rows,
            cells,
        }
    }

    fn row(&self, local: usize) -> &[f64] {
        &self.cells[local * self.grid..(local + 1) * self.grid]
    }

    /// The first own row (sent to the rank above).
    pub fn top_row(&self) -> &[f64] {
        self.row(1)
    }

    /// The last own row (sent to the rank below).
    pub fn bottom_row(&self) -> &[f64] {
        self.row(self.rows)
    }

    pub fn set_halo_above(&mut self, values: &[f64]) {
        self.cells[..self.grid].copy_from_slice(values);
    }

    pub fn set_halo_below(&mut self, values: &[f64]) {
        let at = (self.rows + 1) * self.grid;
        self.cells[at..at + self.grid].copy_from_slice(values);
    }

    /// Update every own interior point of `color` (0 = red, 1 = black).
    pub fn sweep(&mut self, color: usize, omega: f64) {
        let g = self.grid;
        for local in 1..=self.rows {
            let global = self.first + local - 1;
            let start = 1 + (global + 1 + color) % 2;
            for j in (start..g - 1).step_by(2) {
                let at = local * g + j;
                let c = &self.cells;
                let neighbours = c[at - g] + c[at + g] + c[at - 1] + c[at + 1];
                let u = c[at];
                self.cells[at] = u + omega * (neighbours / 4.0 - u);
            }
        }
    }

    /// Per own row: `(Σ_j r², Σ_j u)` over the interior columns (halos must be current).
    pub fn row_sums(&self) -> Vec<(f64, f64)> {
        let g = self.grid;
        (1..=self.rows)
            .map(|local| {
                let (mut r2, mut sum) = (0.0, 0.0);
                for j in 1..g - 1 {
                    let at = local * g + j;
                    let c = &self.cells;
                    let r = c[at - g] + c[at + g] + c[at - 1] + c[at + 1] - 4.0 * c[at];
                    r2 += r * r;
                    sum += c[at];
                }
                (r2, sum)
            })
            .collect()
    }
}

/// The serial reference: `iterations` red-black iterations on one block holding every interior row.
pub fn serial(grid: usize, omega: f64, iterations: u64) -> Checksum {
    let mut block = Block::new(grid, 1, grid - 2);
    for _ in 0..iterations {
        block.sweep(0, omega);
        block.sweep(1, omega);
    }
    Checksum::from_rows(&block.row_sums())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_deals_rows_evenly() {
        // 128-grid: 126 interior rows on 4 ranks = 32, 32, 31, 31 starting at rows 1, 33, 65, 96.
        let parts: Vec<_> = (0..4).map(|r| partition(128, 4, r)).collect();
        assert_eq!(parts, vec![(1, 32), (33, 32), (65, 31), (96, 31)]);
        assert_eq!(parts.iter().map(|p| p.1).sum::<usize>(), 126);
    }

    #[test]
    fn colours_alternate_like_a_chessboard() {
        // One red sweep from zero on a 4×4 grid: only red interior points next to the top edge change.
        // (1,1) is red (1+1 even): neighbours 1 (top) + 0 + 0 + 0 → u = 0 + 1.0 × (1/4 − 0) = 0.25.
        // (1,2) is black: unchanged.
        let mut b = Block::new(4, 1, 2);
        b.sweep(0, 1.0);
        assert_eq!(b.top_row(), &[0.0, 0.25, 0.0, 0.0]);
    }

    /// Split the grid into `ranks` blocks and iterate with explicit halo copies (what the program does over TCP).
    fn blocked(grid: usize, omega: f64, iterations: u64, ranks: usize) -> Checksum {
        let mut blocks: Vec<Block> = (0..ranks)
            .map(|r| {
                let (first, rows) = partition(grid, ranks, r);
                Block::new(grid, first, rows)
            })
            .collect();
        let exchange = |blocks: &mut Vec<Block>| {
            for r in 0..ranks - 1 {
                let down = blocks[r].bottom_row().to_vec();
                let up = blocks[r + 1].top_row().to_vec();
                blocks[r + 1].set_halo_above(&down);
                blocks[r].set_halo_below(&up);
            }
        };
        for _ in 0..iterations {
            exchange(&mut blocks);
            blocks.iter_mut().for_each(|b| b.sweep(0, omega));
            exchange(&mut blocks);
            blocks.iter_mut().for_each(|b| b.sweep(1, omega));
        }
        exchange(&mut blocks);
        let rows: Vec<(f64, f64)> = blocks.iter().flat_map(|b| b.row_sums()).collect();
        Checksum::from_rows(&rows)
    }

    #[test]
    fn any_decomposition_gives_the_serial_bits() {
        let serial = serial(32, 1.5, 40);
        for ranks in [1, 2, 3, 7, 30] {
            assert_eq!(
                blocked(32, 1.5, 40, ranks).hex(),
                serial.hex(),
                "{ranks} ranks"
            );
        }
    }

    #[test]
    fn sor_converges() {
        // The residual shrinks as iterations grow.
        let early = serial(16, 1.5, 5).residual_norm;
        let late = serial(16, 1.5, 200).residual_norm;
        assert!(late < early / 100.0, "{early} → {late}");
    }
}
