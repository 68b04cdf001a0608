//! Sentence embeddings with all-MiniLM-L6-v2 run in process (candle): the
//! dense half of hybrid retrieval. Mean of the token vectors over the real
//! (unpadded) tokens, then unit length, as sentence-transformers does — so
//! a dot product is the cosine.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::{Error, Result};

/// The folder under the models dir that holds the model's three files.
pub const MODEL_DIR: &str = "all-minilm-l6-v2";
/// Length of every vector.
pub const DIMENSIONS: usize = 384;
/// Tokens the model reads per text (the model was trained at this length;
/// the rest of a longer passage is not seen).
const MAX_TOKENS: usize = 256;
/// Texts run through the model at once.
const BATCH: usize = 32;

pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
}

impl Embedder {
    /// The model as the set-up installs it, under `models_dir`.
    pub fn installed(models_dir: &Path) -> Result<Self> {
        Self::load(&models_dir.join(MODEL_DIR))
    }

    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let fail = |why: String| Error::Model { path: dir.display().to_string(), why };
        let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| fail(format!("{name}: {e}")));
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(|e| fail(format!("config.json: {e}")))?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| fail(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| fail(e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        let device = Device::Cpu;
        let weights = VarBuilder::from_buffered_safetensors(read("model.safetensors")?, DType::F32, &device).map_err(|e| fail(e.to_string()))?;
        let model = BertModel::load(weights, &config).map_err(|e| fail(e.to_string()))?;
        Ok(Self { model, tokenizer, device })
    }

    /// One unit vector per text, in order. Texts of similar length are
    /// run together, so a batch is padded little.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.batch(&batch).map_err(|e| Error::Model { path: MODEL_DIR.into(), why: e.to_string() })?;
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn batch(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true)?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> candle_core::Result<Tensor> {
            let rows = encodings.iter().map(|e| Tensor::new(f(e), &self.device)).collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::stack(&rows, 0)
        };
        let ids = rows(&|e| e.get_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        Ok(mean.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

/// Dot product; the cosine for unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
