//! A tail's largest values as the fit needs them: a value file's in line order, ties of rounded
//! data spread over their rounding step, lists kept in descending order.

use super::part::{sorted_desc, Part, ReadOpts, KEEP};
use latlab_core::stats::evt::Exceedance;

/// A value file: its largest values with their line order (unless the file is sorted, whose
/// order says nothing about bursts).
pub(super) fn part(v: Vec<f64>, o: &ReadOpts, name: &str, notes: &mut Vec<String>) -> Part {
    let n = v.len() as u64;
    let sorted = v.windows(2).all(|w| w[0] <= w[1]) || v.windows(2).all(|w| w[0] >= w[1]);
    if sorted {
        notes.push(format!(
            "{name}: the values are sorted, so their order says nothing about bursts: taken as independent"
        ));
    }
    let mut top: Vec<Exceedance> = v
        .iter()
        .enumerate()
        .map(|(i, &value)| Exceedance {
            value,
            series: 0,
            pos: i as u64,
        })
        .collect();
    let top = largest(&mut top, KEEP);
    let values: Vec<f64> = top.iter().map(|e| e.value).collect();
    Part {
        top: spread_ties(top, resolution(&values)),
        n,
        ordered: !sorted && !o.no_decluster,
        series: 1,
        ns: false,
        seconds: None,
    }
}

/// The `keep` largest, descending; every value above the smallest kept is kept.
pub(super) fn largest(all: &mut [Exceedance], keep: usize) -> Vec<Exceedance> {
    let desc = |a: &Exceedance, b: &Exceedance| b.value.total_cmp(&a.value);
    if all.len() > keep {
        all.select_nth_unstable_by(keep, desc);
    }
    let mut top = all[..all.len().min(keep)].to_vec();
    top.sort_by(desc);
    top
}

/// The step all values are multiples of (1, 0.1, … 1e-6), None when they have no common one.
fn resolution(v: &[f64]) -> Option<f64> {
    (0..=6).map(|k| 10f64.powi(-k)).find(|r| {
        v.iter().all(|x| {
            let y = x / r;
            (y - y.round()).abs() <= 1e-9 * y.abs().max(1.0)
        })
    })
}

/// Rounded data have ties that no continuous fit explains: each group of equal values is
/// spread evenly over the rounding interval (±step/2), in position order. The smallest value's
/// group is dropped, since some of its copies may be missing.
pub(crate) fn spread_ties(mut top: Vec<Exceedance>, step: Option<f64>) -> Vec<Exceedance> {
    let Some(r) = step else {
        return top;
    };
    if top.windows(2).all(|w| w[0].value != w[1].value) {
        return top;
    }
    top.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pos.cmp(&b.pos)));
    let last = top.last().map(|e| e.value);
    top.retain(|e| Some(e.value) != last);
    let mut i = 0;
    while i < top.len() {
        let mut j = i;
        while j < top.len() && top[j].value == top[i].value {
            j += 1;
        }
        let c = (j - i) as f64;
        let v = top[i].value;
        for (k, e) in top[i..j].iter_mut().enumerate() {
            e.value = v - r / 2.0 + (k as f64 + 0.5) / c * r;
        }
        i = j;
    }
    sorted_desc(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, pos: u64) -> Exceedance {
        Exceedance {
            value,
            series: 0,
            pos,
        }
    }

    #[test]
    fn ties_of_rounded_values_are_spread_over_their_step() {
        let top = vec![e(12.0, 4), e(10.0, 1), e(10.0, 3), e(9.0, 0), e(9.0, 2)];
        let s = spread_ties(top, resolution(&[12.0, 10.0, 9.0]));
        let v: Vec<f64> = s.iter().map(|x| x.value).collect();
        // 12 alone stays; the two 10s become 10.25 and 9.75; the 9s (the floor) go.
        assert_eq!(v, vec![12.0, 10.25, 9.75]);
        assert_eq!(resolution(&[0.5, 1.25]), Some(0.01));
        assert_eq!(resolution(&[std::f64::consts::PI]), None);
    }
}
