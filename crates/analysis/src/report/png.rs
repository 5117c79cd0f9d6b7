//! PNG output of a chart for `latlab plot --png`: the same SVG, rasterised by resvg at twice
//! its size, with text in the first of a few common system fonts that is installed.

use latlab_core::error::{Error, Result};
use resvg::{tiny_skia, usvg};

/// Families tried, in order, for the charts' `sans-serif` text.
const FAMILIES: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// Renders `svg` to PNG bytes at `scale` times its size. Returns the PNG and, when no known
/// font is installed, a note that text may be missing.
pub fn render(svg: &str, scale: f32) -> Result<(Vec<u8>, Option<String>)> {
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    let found = FAMILIES.iter().find(|f| {
        db.faces()
            .any(|face| face.families.iter().any(|(name, _)| name == *f))
    });
    let note = match found {
        Some(f) => {
            db.set_sans_serif_family(*f);
            opt.font_family = (*f).to_string();
            None
        }
        None => Some(format!(
            "none of the fonts {} is installed: the PNG's text may be missing (the SVG is complete)",
            FAMILIES.join(", ")
        )),
    };
    let tree = usvg::Tree::from_str(svg, &opt)
        .map_err(|e| Error::Env(format!("internal: the chart is not valid SVG: {e}")))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or_else(|| Error::Env("internal: the chart has no size".into()))?;
    let mut pix = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| Error::Env("cannot allocate the PNG's pixels".into()))?;
    pix.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pix.as_mut(),
    );
    let png = pix
        .encode_png()
        .map_err(|e| Error::Env(format!("cannot encode the PNG: {e}")))?;
    Ok((png, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_becomes_a_png_of_twice_its_size() {
        let svg = crate::report::svg::line_chart(
            "t",
            crate::report::svg::Axis::fit([0.0, 1.0], false, "x"),
            crate::report::svg::Axis::fit([1.0, 10.0], true, "y"),
            &[crate::report::svg::Line::new(
                "a",
                vec![(0.0, 1.0), (1.0, 10.0)],
            )],
        );
        let (png, _) = render(&svg, 2.0).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, at bytes 16..24.
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((w, h), (1520, 680));
    }
}
