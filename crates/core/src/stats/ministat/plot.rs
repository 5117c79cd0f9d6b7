//! ministat's ASCII plot: data points stacked per column (set symbols combined by bitwise OR,
//! as ministat does), then the `|_A_M_|` bars, one shared line or one per set (`-s`).

use super::read::DataSet;
use super::{avg, median, stddev};

/// Symbols by set number; index = bitwise OR of the set numbers (1-based) in a cell.
pub(crate) const SYMBOL: [u8; 8] = [b' ', b'x', b'+', b'*', b'%', b'#', b'@', b'O'];

/// One set's column counts in the plot.
struct Stack {
    counts: Vec<usize>,
    bit: u8,
    wiped_from: usize,
}

/// The plot, built up set by set exactly as ministat's `SetupPlot/DimPlot/PlotSet`.
pub(crate) struct Plot {
    width: usize,
    min: f64,
    max: f64,
    span: f64,
    dx: f64,
    x0: f64,
    height: usize,
    /// Points per column of each set, with its symbol bit and the first row a later, taller
    /// set wiped (ministat's realloc-and-clear): rows at or above it no longer show the set.
    stacks: Vec<Stack>,
    bars: Vec<Option<Vec<u8>>>,
    separate: bool,
}

impl Plot {
    /// Sizes the plot to cover every set's min, max and mean ± stddev.
    pub(crate) fn new(width: usize, separate: bool, sets: &[DataSet]) -> Plot {
        let mut p = Plot {
            width,
            min: 999e99,
            max: -999e99,
            span: 0.0,
            dx: 0.0,
            x0: 0.0,
            height: 0,
            stacks: Vec::new(),
            bars: vec![None; sets.len()],
            separate,
        };
        for s in sets {
            let (a, sd) = (avg(s), stddev(s));
            for v in [s.min, s.max, a - sd, a + sd] {
                p.adjust(v);
            }
        }
        if p.span == 0.0 {
            return p;
        }
        // Points per column, for all sets in parallel (large sets dominate). ministat walks its
        // sorted array counting runs of equal columns; the column is monotonic in the value, so
        // a run is exactly the column's count.
        let cols: Vec<Vec<usize>> = std::thread::scope(|sc| {
            let pr = &p;
            let hs: Vec<_> = sets
                .iter()
                .map(|s| sc.spawn(move || pr.counts(&s.points)))
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("column thread"))
                .collect()
        });
        for (i, (s, c)) in sets.iter().zip(cols).enumerate() {
            p.add_set(s, c, i + 1);
        }
        p
    }

    fn adjust(&mut self, a: f64) {
        if a < self.min {
            self.min = a;
        }
        if a > self.max {
            self.max = a;
        }
        self.span = self.max - self.min;
        self.dx = self.span / (self.width as f64 - 1.0);
        self.x0 = self.min - 0.5 * self.dx;
    }

    /// Points per column. Four lanes of counts, each value to the lane of its position: in one
    /// array, runs of values in the same column made each count wait for the one before.
    fn counts(&self, points: &[f64]) -> Vec<usize> {
        const LANES: usize = 4;
        let w = self.width;
        let mut lanes = vec![0usize; LANES * w];
        let mut add = |lane: usize, v: f64| {
            if let Ok(x) = usize::try_from(self.col(v)) {
                if x < w {
                    lanes[lane * w + x] += 1;
                }
            }
        };
        let quads = points.chunks_exact(LANES);
        for &v in quads.remainder() {
            add(0, v);
        }
        for q in quads {
            for (lane, &v) in q.iter().enumerate() {
                add(lane, v);
            }
        }
        (0..w)
            .map(|x| (0..LANES).map(|l| lanes[l * w + x]).sum())
            .collect()
    }

    fn col(&self, v: f64) -> i32 {
        ((v - self.x0) / self.dx) as i32
    }

    fn add_set(&mut self, ds: &DataSet, counts: Vec<usize>, val: usize) {
        let w = self.width;
        let bar = if self.separate { val - 1 } else { 0 };
        let barline = self.bars[bar].get_or_insert_with(|| vec![0u8; w]).clone();
        // Tallest stack of points in one column, plus one.
        let m = counts.iter().copied().max().unwrap_or(0).max(1) + 1;
        if m > self.height {
            // ministat reallocs to m rows and clears from the *current* height up: rows a
            // taller earlier set left above a shorter one's height are wiped.
            for st in &mut self.stacks {
                st.wiped_from = st.wiped_from.min(self.height);
            }
        }
        // ministat sets the height even when it shrinks (later rows are then not printed).
        self.height = m;
        self.stacks.push(Stack {
            counts,
            bit: val as u8,
            wiped_from: usize::MAX,
        });
        let mut b = barline;
        let mut put = |x: i32, c: u8, only_empty: bool| {
            if let Some(cell) = usize::try_from(x).ok().and_then(|x| b.get_mut(x)) {
                if !only_empty || *cell == 0 {
                    *cell = c;
                }
            }
        };
        let (a, sd) = (avg(ds), stddev(ds));
        if !sd.is_nan() {
            let lo = self.col(a - sd);
            let hi = self.col(a + sd);
            put(hi, b'|', false);
            put(lo, b'|', false);
            // Only columns inside the plot can change: clamping keeps the output and bounds
            // the loop when a value near f64's range puts the bar ends at i32's.
            for k in lo.max(-1).saturating_add(1)..hi.min(w as i32) {
                put(k, b'_', true);
            }
        }
        put(self.col(median(ds)), b'M', false);
        put(self.col(a), b'A', false);
        self.bars[bar] = Some(b);
    }

    /// Writes the plot as ministat prints it.
    pub(crate) fn render(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if self.span == 0.0 {
            return out.write_all(b"[no plot, span is zero width]\n");
        }
        let w = self.width;
        let border = format!("+{}+\n", "-".repeat(w));
        // Written a megabyte at a time: each write(2) into a file costs more than its bytes.
        let mut s: Vec<u8> = Vec::with_capacity((1 << 20) + 4096);
        s.extend_from_slice(border.as_bytes());
        // A row only changes where some stack ends or stops being wiped: build it there and
        // repeat it otherwise (a million points make plots of 100 000+ rows).
        let mut changes = vec![false; self.height + 1];
        for st in &self.stacks {
            for &c in &st.counts {
                changes[c.min(self.height)] = true;
            }
            if let Some(j) = st.wiped_from.checked_sub(1) {
                changes[j.min(self.height)] = true;
            }
        }
        let mut line = vec![b' '; w + 3];
        (line[0], line[w + 1], line[w + 2]) = (b'|', b'|', b'\n');
        for j in (1..self.height).rev() {
            if j == self.height - 1 || changes[j] {
                let mut cells = vec![0u8; w];
                for st in self.stacks.iter().filter(|st| j < st.wiped_from) {
                    for (cell, &c) in cells.iter_mut().zip(&st.counts) {
                        *cell |= if c >= j { st.bit } else { 0 };
                    }
                }
                for (o, k) in line[1..=w].iter_mut().zip(cells) {
                    *o = SYMBOL[(k & 7) as usize];
                }
            }
            s.extend_from_slice(&line);
            if s.len() > 1 << 20 {
                out.write_all(&s)?;
                s.clear();
            }
        }
        for b in self.bars.iter().flatten() {
            s.push(b'|');
            s.extend(b.iter().map(|&k| if k == 0 { b' ' } else { k }));
            s.extend_from_slice(b"|\n");
        }
        s.extend_from_slice(border.as_bytes());
        out.write_all(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lanes count each value once, in its column, for every length (not only multiples
    /// of four), values outside the plot dropped as ministat drops them.
    #[test]
    fn column_counts_match_one_value_at_a_time() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..40usize {
            let v: Vec<f64> = (0..n * 7)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 2000) as f64 / 10.0 - 50.0
                })
                .collect();
            let mut p = Plot::new(20 + n, false, &[]);
            p.adjust(-10.0);
            p.adjust(120.0);
            let mut want = vec![0usize; p.width];
            for &d in &v {
                if let Some(c) = usize::try_from(p.col(d)).ok().and_then(|c| want.get_mut(c)) {
                    *c += 1;
                }
            }
            assert_eq!(p.counts(&v), want, "{n}");
            assert!(
                n < 2 || want.iter().sum::<usize>() < v.len(),
                "some out of the plot"
            );
        }
    }
}
