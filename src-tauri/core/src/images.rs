//! Images the person attaches to a message (pasted or dropped into the message box, or
//! `mandate run --image`). The host decodes every image itself, refuses what is not one or is
//! too large, and re-encodes it at a size the models read well; the page only ever sees the
//! small preview the host made. What the model receives is the re-encoded image, never the
//! bytes as they came.

use std::io::Cursor;
use std::path::Path;

use base64::Engine;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

use crate::llm::ImageData;
use crate::protocol::ImageView;

/// The most an attached file (or pasted image) may weigh as it comes.
pub const MAX_INPUT_BYTES: u64 = 20 * 1024 * 1024;
/// The most pixels along either side an image may claim before it is decoded (a small file
/// can claim a huge image: it is refused before the memory is taken).
const MAX_SIDE: u32 = 16_384;
/// The memory decoding may take.
const MAX_DECODE_ALLOC: u64 = 512 * 1024 * 1024;
/// The longest side sent to the model: the size the providers read without scaling it down
/// again (Anthropic's advice; OpenAI's high detail reads as much).
pub const MODEL_SIDE: u32 = 1568;
/// The most one re-encoded image may weigh (Anthropic refuses more than 5 MB of base64).
const MAX_ENCODED_BYTES: usize = 3 * 1024 * 1024;
/// The longest side of the preview shown in the window.
const PREVIEW_SIDE: u32 = 480;
/// How many images one message may carry.
pub const MAX_PER_MESSAGE: usize = 8;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageError {
    #[error("{name} weighs {size} bytes; an image may weigh at most {max} bytes")]
    TooLarge { name: String, size: u64, max: u64 },
    #[error("{name} is not an image Mandate can read (PNG, JPEG, GIF or WebP)")]
    NotAnImage { name: String },
    #[error("{name} could not be read as an image: {reason}")]
    Unreadable { name: String, reason: String },
    #[error(
        "{name} is {width}×{height} pixels; an image may be at most {MAX_SIDE} pixels along a side"
    )]
    TooManyPixels {
        name: String,
        width: u32,
        height: u32,
    },
    #[error("one message may carry at most {MAX_PER_MESSAGE} images")]
    TooMany,
}

/// An image ready to send: what the model receives and what the window shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub data: ImageData,
    pub view: ImageView,
}

/// Reads an image file the person named (dropped on the window, or `--image`): its size is
/// checked before it is read.
pub fn from_file(path: &Path) -> Result<Prepared, ImageError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let unreadable = |e: std::io::Error| ImageError::Unreadable {
        name: name.clone(),
        reason: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(ImageError::NotAnImage { name });
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(ImageError::TooLarge {
            name,
            size: meta.len(),
            max: MAX_INPUT_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    prepare(&name, &bytes)
}

/// Decodes `bytes` (whatever they claim to be), bounded, and re-encodes them: PNG for
/// screenshots and drawings, JPEG for photographs or when a PNG would be too heavy.
pub fn prepare(name: &str, bytes: &[u8]) -> Result<Prepared, ImageError> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(ImageError::TooLarge {
            name: name.into(),
            size: bytes.len() as u64,
            max: MAX_INPUT_BYTES,
        });
    }
    let not_image = || ImageError::NotAnImage { name: name.into() };
    let format = image::guess_format(bytes).map_err(|_| not_image())?;
    if !matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP
    ) {
        return Err(not_image());
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits_for_decode());
    let (width, height) = reader.into_dimensions().map_err(|e| unreadable(name, &e))?;
    if width > MAX_SIDE || height > MAX_SIDE || width == 0 || height == 0 {
        return Err(ImageError::TooManyPixels {
            name: name.into(),
            width,
            height,
        });
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits_for_decode());
    let decoded = reader.decode().map_err(|e| unreadable(name, &e))?;
    let sized = fit(decoded, MODEL_SIDE);
    let (media_type, encoded) =
        encode_for_model(&sized, format == ImageFormat::Jpeg).map_err(|e| unreadable(name, &e))?;
    let preview = fit(sized.clone(), PREVIEW_SIDE);
    let preview_jpeg = jpeg(&preview, 80).map_err(|e| unreadable(name, &e))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let id = hex::encode(Sha256::digest(&encoded));
    let data = ImageData {
        media_type: media_type.into(),
        data: b64.encode(&encoded),
        width: sized.width(),
        height: sized.height(),
    };
    let view = ImageView {
        id,
        name: name.into(),
        media_type: media_type.into(),
        width: sized.width(),
        height: sized.height(),
        bytes: encoded.len() as u64,
        tokens: data.tokens(),
        preview: format!("data:image/jpeg;base64,{}", b64.encode(preview_jpeg)),
    };
    Ok(Prepared { data, view })
}

/// Whether images may go to a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// Neither its name nor its server says: the images go, with this note for the person.
    Unknown(String),
    /// The model does not read images: the message does not go; this says why.
    Refused(String),
}

/// Whether the model `task`'s next run uses (its mode's, where the mode names one, else
/// `provider`'s) reads images.
pub async fn verdict_for_task(
    provider: &dyn crate::llm::Provider,
    gov: &crate::agent::Governance,
    task: &crate::agent::TaskHandle,
) -> Verdict {
    let current = provider.model_id();
    let model = crate::agent::model_for_task(gov, task, &current);
    match (model != current)
        .then(|| provider.with_model(&model))
        .flatten()
    {
        Some(other) => verdict(other.as_ref()).await,
        None => verdict(provider).await,
    }
}

/// Whether `provider`'s model reads images: by its name, else by what its server says.
pub async fn verdict(provider: &dyn crate::llm::Provider) -> Verdict {
    let model_id = provider.model_id();
    let model = model_id
        .split_once('/')
        .map_or(model_id.as_str(), |(_, m)| m);
    let known = match crate::llm::accepts_images_by_name(model) {
        Some(known) => Some(known),
        None => tokio::time::timeout(std::time::Duration::from_secs(5), provider.model_info())
            .await
            .ok()
            .and_then(|info| info.images),
    };
    match known {
        Some(true) => Verdict::Accepted,
        Some(false) => Verdict::Refused(format!(
            "{model} does not accept images. Remove them, or choose a model that reads images (for example claude-sonnet-4-5 or gpt-4.1)."
        )),
        None => Verdict::Unknown(format!(
            "Mandate cannot tell whether {model} reads images; they were sent. If the provider refuses the message, send it again without them."
        )),
    }
}

fn limits_for_decode() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    limits
}

fn unreadable(name: &str, e: &image::ImageError) -> ImageError {
    ImageError::Unreadable {
        name: name.into(),
        reason: e.to_string(),
    }
}

/// The image scaled down (never up) so that its longest side is at most `side`.
fn fit(image: DynamicImage, side: u32) -> DynamicImage {
    if image.width() <= side && image.height() <= side {
        return image;
    }
    image.resize(side, side, image::imageops::FilterType::Triangle)
}

fn encode_for_model(
    image: &DynamicImage,
    photo: bool,
) -> Result<(&'static str, Vec<u8>), image::ImageError> {
    if !photo {
        let mut png = Vec::new();
        image.write_to(&mut Cursor::new(&mut png), ImageFormat::Png)?;
        if png.len() <= MAX_ENCODED_BYTES {
            return Ok(("image/png", png));
        }
    }
    for quality in [85, 70, 50] {
        let out = jpeg(image, quality)?;
        if out.len() <= MAX_ENCODED_BYTES {
            return Ok(("image/jpeg", out));
        }
    }
    Ok(("image/jpeg", jpeg(image, 30)?))
}

/// JPEG has no transparency: what is transparent becomes white, as a viewer would show it.
fn jpeg(image: &DynamicImage, quality: u8) -> Result<Vec<u8>, image::ImageError> {
    let rgb = match image.color().has_alpha() {
        false => image.to_rgb8(),
        true => {
            let rgba = image.to_rgba8();
            let mut rgb = image::RgbImage::new(rgba.width(), rgba.height());
            for (out, px) in rgb.pixels_mut().zip(rgba.pixels()) {
                let a = u16::from(px[3]);
                for c in 0..3 {
                    out[c] = ((u16::from(px[c]) * a + 255 * (255 - a)) / 255) as u8;
                }
            }
            rgb
        }
    };
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
    rgb.write_with_encoder(encoder)?;
    Ok(out)
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
