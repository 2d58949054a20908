use std::io::Cursor;

use base64::Engine;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

use super::*;

fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut out), format)
        .expect("encode");
    out
}

/// A screenshot-like picture: flat colours and a few lines of "text".
fn screenshot(w: u32, h: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
        if y % 40 < 12 && x % 9 < 6 {
            Rgb([20, 20, 20])
        } else {
            Rgb([245, 245, 250])
        }
    }))
}

fn decoded(data: &ImageData) -> DynamicImage {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&data.data)
        .expect("base64");
    image::load_from_memory(&bytes).expect("the model gets an image")
}

#[test]
fn a_large_screenshot_is_scaled_to_what_models_read_and_stays_a_png() {
    let png = encoded(&screenshot(3000, 2000), ImageFormat::Png);
    let p = prepare("shot.png", &png).expect("prepared");
    assert_eq!(p.data.media_type, "image/png");
    assert_eq!((p.data.width, p.data.height), (1568, 1045));
    let back = decoded(&p.data);
    assert_eq!((back.width(), back.height()), (1568, 1045));
    assert_eq!(p.view.name, "shot.png");
    assert_eq!(p.view.tokens, p.data.tokens());
    assert!(p.view.preview.starts_with("data:image/jpeg;base64,"));
    // The id names the bytes the model gets.
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&p.data.data)
        .expect("base64");
    assert_eq!(p.view.id, hex::encode(Sha256::digest(&raw)));
    assert_eq!(p.view.bytes, raw.len() as u64);
    assert!(p.view.preview.len() < p.data.data.len());
}

#[test]
fn a_small_image_is_not_enlarged_and_photographs_stay_jpeg() {
    let photo = DynamicImage::ImageRgb8(RgbImage::from_fn(640, 480, |x, y| {
        Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 256) as u8])
    }));
    let p = prepare("photo.jpg", &encoded(&photo, ImageFormat::Jpeg)).expect("prepared");
    assert_eq!(p.data.media_type, "image/jpeg");
    assert_eq!((p.data.width, p.data.height), (640, 480));
}

#[test]
fn gif_and_webp_are_read_and_sent_as_png_with_their_transparency() {
    let clear = DynamicImage::ImageRgba8(RgbaImage::from_fn(64, 32, |x, _| {
        Rgba([200, 10, 10, if x < 32 { 0 } else { 255 }])
    }));
    for format in [ImageFormat::Gif, ImageFormat::WebP, ImageFormat::Png] {
        let p = prepare("x", &encoded(&clear, format)).expect("prepared");
        assert_eq!(p.data.media_type, "image/png", "{format:?}");
        let back = decoded(&p.data).to_rgba8();
        assert_eq!(back.get_pixel(0, 0)[3], 0, "{format:?}");
        assert_eq!(back.get_pixel(63, 0)[3], 255, "{format:?}");
    }
}

#[test]
fn what_is_not_an_image_is_refused_by_name() {
    for (name, bytes) in [
        ("notes.txt", b"just some text".to_vec()),
        (
            "drawing.svg",
            b"<svg xmlns='http://www.w3.org/2000/svg'/>".to_vec(),
        ),
        ("doc.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec()),
        ("empty.png", Vec::new()),
    ] {
        assert_eq!(
            prepare(name, &bytes),
            Err(ImageError::NotAnImage { name: name.into() }),
            "{name}"
        );
    }
    // A PNG cut short is named as unreadable, not passed on.
    let png = encoded(&screenshot(200, 200), ImageFormat::Png);
    let cut = &png[..png.len() / 2];
    assert!(
        matches!(prepare("cut.png", cut), Err(ImageError::Unreadable { ref name, .. }) if name == "cut.png"),
        "{:?}",
        prepare("cut.png", cut)
    );
}

#[test]
fn an_image_that_claims_too_many_pixels_is_refused_before_it_is_decoded() {
    // Tiny on disk, enormous when decoded.
    let wide = DynamicImage::ImageLuma8(image::GrayImage::new(20_000, 1));
    let png = encoded(&wide, ImageFormat::Png);
    assert!(png.len() < 10_000);
    assert!(matches!(
        prepare("wide.png", &png),
        Err(ImageError::TooManyPixels {
            width: 20_000,
            height: 1,
            ..
        }) | Err(ImageError::Unreadable { .. })
    ));
}

#[test]
fn files_are_sized_before_they_are_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let big = dir.path().join("big.png");
    let f = std::fs::File::create(&big).expect("create");
    f.set_len(MAX_INPUT_BYTES + 1).expect("grow");
    assert!(matches!(
        from_file(&big),
        Err(ImageError::TooLarge { size, .. }) if size == MAX_INPUT_BYTES + 1
    ));
    assert!(matches!(
        from_file(dir.path()),
        Err(ImageError::NotAnImage { .. })
    ));
    assert!(matches!(
        from_file(&dir.path().join("gone.png")),
        Err(ImageError::Unreadable { .. })
    ));
    let ok = dir.path().join("ok.png");
    std::fs::write(&ok, encoded(&screenshot(100, 80), ImageFormat::Png)).expect("write");
    let p = from_file(&ok).expect("read");
    assert_eq!((p.view.name.as_str(), p.view.width), ("ok.png", 100));
}
