//! wgpu's pipeline cache, kept in a file the application names, so a later process starts
//! with the driver's compiled pipelines instead of compiling every shader again.
//!
//! The file is the bytes `wgpu::PipelineCache::get_data` returned, behind a header of our
//! own (magic, length, checksum). wgpu only accepts data it produced; the checksum is what
//! lets this module show that for a file on disk before handing it over (see the safety
//! comment in [`DiskCache::open`]).

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

use crate::error::RuntimeError;
use crate::gpu::Gpu;

const MAGIC: &[u8; 8] = b"KRPCACHE";
const HEADER_LEN: usize = 24;

/// What [`crate::Context::use_pipeline_cache`] found at the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineCacheLoad {
    /// The file held a cache saved earlier; wgpu and the driver use it where it matches
    /// this adapter and driver (and start empty where it does not).
    Loaded {
        /// Bytes of cache data.
        bytes: usize,
    },
    /// No file yet: the cache starts empty and [`crate::Context::save_pipeline_cache`] creates it.
    Missing,
    /// The file is not a cache this runtime saved, or it was truncated or corrupted; it is
    /// ignored (the cache starts empty) and replaced by the next save.
    Rejected {
        /// Why.
        reason: String,
    },
}

/// The pipeline cache of a context and where it is saved.
#[derive(Clone)]
pub(crate) struct DiskCache {
    pub(crate) cache: wgpu::PipelineCache,
    path: PathBuf,
}

fn checksum(data: &[u8]) -> u64 {
    // A change of std's hasher between Rust releases only makes old files `Rejected`.
    let mut hasher = DefaultHasher::new();
    hasher.write(data);
    hasher.finish()
}

/// The cache data in a file's bytes, or why there is none.
fn payload(file: &[u8]) -> Result<&[u8], String> {
    let (header, data) = file
        .split_at_checked(HEADER_LEN)
        .ok_or_else(|| format!("{} bytes is shorter than the header", file.len()))?;
    let word = |i: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[i..i + 8]);
        u64::from_le_bytes(bytes)
    };
    if &header[..8] != MAGIC {
        return Err("not a pipeline cache file of kernel-runtime".to_owned());
    }
    if word(8) != data.len() as u64 {
        return Err(format!(
            "the header says {} bytes of data, the file has {}",
            word(8),
            data.len()
        ));
    }
    if word(16) != checksum(data) {
        return Err("the checksum does not match the data".to_owned());
    }
    Ok(data)
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> RuntimeError {
    RuntimeError::PipelineCache {
        path: path.display().to_string(),
        message: format!("{what}: {e}"),
    }
}

impl DiskCache {
    /// wgpu's pipeline cache for `gpu`, loaded from `path` if a file is there (see
    /// [`crate::Context::use_pipeline_cache`]).
    pub(crate) fn open(
        gpu: &Gpu,
        path: PathBuf,
    ) -> Result<(Self, PipelineCacheLoad), RuntimeError> {
        if !gpu
            .device
            .features()
            .contains(wgpu::Features::PIPELINE_CACHE)
        {
            return Err(RuntimeError::MissingFeature("pipeline-cache"));
        }
        let file = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_error(&path, "reading", &e)),
        };
        let (data, load) = match file.as_deref().map(payload) {
            None => (None, PipelineCacheLoad::Missing),
            Some(Ok(data)) => (Some(data), PipelineCacheLoad::Loaded { bytes: data.len() }),
            Some(Err(reason)) => (None, PipelineCacheLoad::Rejected { reason }),
        };
        let descriptor = wgpu::PipelineCacheDescriptor {
            label: Some("kernel-runtime pipeline cache"),
            data,
            fallback: true,
        };
        // SAFETY: wgpu requires `data` to be bytes an earlier `PipelineCache::get_data`
        // returned. It is passed only when the file's checksum matches it, and only
        // `save_pipeline_cache` writes that header, around exactly the bytes `get_data` gave
        // it; truncation and corruption are rejected above. wgpu itself then checks that the
        // data came from this adapter, driver and wgpu version, and starts empty otherwise
        // (`fallback`).
        #[allow(unsafe_code)]
        let cache = gpu.scoped("pipeline cache", || unsafe {
            gpu.device.create_pipeline_cache(&descriptor)
        })?;
        Ok((Self { cache, path }, load))
    }

    /// Writes the cache to its path (through a temporary file and a rename, so a reader
    /// never sees half a file). Returns the bytes of cache data written, or `None` when the
    /// backend has no data to give.
    pub(crate) fn save(&self) -> Result<Option<usize>, RuntimeError> {
        let path = &self.path;
        let Some(data) = self.cache.get_data() else {
            return Ok(None);
        };
        let mut file = Vec::with_capacity(HEADER_LEN + data.len());
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&(data.len() as u64).to_le_bytes());
        file.extend_from_slice(&checksum(&data).to_le_bytes());
        file.extend_from_slice(&data);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, "creating the folder", &e))?;
        }
        let partial = path.with_extension("partial");
        std::fs::write(&partial, &file).map_err(|e| io_error(&partial, "writing", &e))?;
        std::fs::rename(&partial, path).map_err(|e| io_error(path, "replacing", &e))?;
        Ok(Some(data.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(data: &[u8]) -> Vec<u8> {
        let mut f = MAGIC.to_vec();
        f.extend_from_slice(&(data.len() as u64).to_le_bytes());
        f.extend_from_slice(&checksum(data).to_le_bytes());
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn only_intact_files_give_their_data() {
        let good = file(b"driver bytes");
        assert_eq!(payload(&good), Ok(&b"driver bytes"[..]));
        assert!(
            payload(&good[..10])
                .unwrap_err()
                .contains("shorter than the header")
        );
        assert!(
            payload(&good[..good.len() - 1])
                .unwrap_err()
                .contains("says 12 bytes")
        );
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(payload(&flipped).unwrap_err().contains("checksum"));
        let mut foreign = good;
        foreign[0] = b'X';
        assert!(
            payload(&foreign)
                .unwrap_err()
                .contains("not a pipeline cache file")
        );
    }
}
