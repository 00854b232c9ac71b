//! The Wasm OCI artifact as the CNCF TAG Runtime's Wasm working group
//! defines it: an OCI image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` (architecture `wasm`, os `wasip2`
//! for a component, the layers' digests, the component's imports and
//! exports) and exactly one `application/wasm` layer holding the
//! component. Owns building that layout for a push and checking a pulled
//! manifest against it; no network and no files.

use crate::digest::Digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The manifest's own media type (an OCI image manifest).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config's media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The one layer's media type.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The config's `architecture`.
pub const ARCHITECTURE: &str = "wasm";
/// The config's `os` for a component.
pub const COMPONENT_OS: &str = "wasip2";
/// A manifest larger than this is refused (the distribution registry's own cap).
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;
/// A config larger than this is not written (and not read).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// An OCI content descriptor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An OCI image manifest (the fields the artifact uses).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The config blob of a Wasm artifact.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default)]
    pub author: Option<String>,
    pub architecture: String,
    pub os: String,
    pub layer_digests: Vec<String>,
    #[serde(default)]
    pub component: Option<ComponentInfo>,
}

/// What a component imports and exports (its top-level names).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ComponentInfo {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    pub target: Option<String>,
}

/// The top-level imports and exports of `bytes`, or why they are not a
/// WebAssembly component (a core module, not Wasm at all, malformed).
pub fn component_info(bytes: &[u8]) -> anyhow::Result<ComponentInfo> {
    use wasmparser::{Encoding, Parser, Payload};
    let mut info = ComponentInfo::default();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| anyhow::anyhow!("not a valid WebAssembly component: {e}"))?;
        match payload {
            Payload::Version { encoding, .. } if depth == 0 => {
                anyhow::ensure!(
                    encoding == Encoding::Component,
                    "a core WebAssembly module, not a component (wink plugins are components: build for wasm32-wasip2)"
                );
            }
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|e| anyhow::anyhow!("malformed component imports: {e}"))?;
                    info.imports.push(import.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    let export = export.map_err(|e| anyhow::anyhow!("malformed component exports: {e}"))?;
                    info.exports.push(export.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

/// The config's `created` for a push: `SOURCE_DATE_EPOCH` (seconds since
/// 1970, the reproducible-builds convention) when set, else none, so
/// that the manifest's digest is the component's alone: the same
/// component pushed twice, anywhere, has the same digest. A value that
/// is not such a number is an error.
pub fn created() -> anyhow::Result<Option<String>> {
    let Some(text) = std::env::var_os("SOURCE_DATE_EPOCH") else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    let at = text
        .trim()
        .parse::<i64>()
        .ok()
        .and_then(|epoch| chrono::DateTime::from_timestamp(epoch, 0))
        .ok_or_else(|| anyhow::anyhow!("SOURCE_DATE_EPOCH={text:?}: not seconds since 1970"))?;
    Ok(Some(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)))
}

/// The blobs and manifest of one artifact, ready to push.
pub struct Built {
    pub config: Vec<u8>,
    pub config_digest: Digest,
    pub layer_digest: Digest,
    pub manifest: Vec<u8>,
    pub manifest_digest: Digest,
}

/// The artifact holding the component `bytes`: its config (imports and
/// exports read from the component, which must be one) and manifest.
pub fn build(bytes: &[u8], created: Option<String>) -> anyhow::Result<Built> {
    let component = component_info(bytes)?;
    let layer_digest = Digest::of(bytes);
    let config = WasmConfig {
        created,
        author: None,
        architecture: ARCHITECTURE.into(),
        os: COMPONENT_OS.into(),
        layer_digests: vec![layer_digest.to_string()],
        component: Some(component),
    };
    let config = serde_json::to_vec(&config)?;
    anyhow::ensure!(
        config.len() <= MAX_CONFIG_BYTES,
        "the artifact's config is over {MAX_CONFIG_BYTES} bytes"
    );
    let config_digest = Digest::of(&config);
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.into()),
        artifact_type: None,
        config: Descriptor {
            media_type: CONFIG_MEDIA_TYPE.into(),
            digest: config_digest.to_string(),
            size: config.len() as u64,
            annotations: None,
        },
        layers: vec![Descriptor {
            media_type: LAYER_MEDIA_TYPE.into(),
            digest: layer_digest.to_string(),
            size: bytes.len() as u64,
            annotations: None,
        }],
        annotations: None,
    };
    let manifest = serde_json::to_vec(&manifest)?;
    let manifest_digest = Digest::of(&manifest);
    Ok(Built {
        config,
        config_digest,
        layer_digest,
        manifest,
        manifest_digest,
    })
}

/// The one component layer of a pulled manifest, checked against the
/// layout and the size cap: its digest and size.
pub fn component_layer(manifest: &[u8], max_bytes: u64) -> anyhow::Result<(Digest, u64)> {
    anyhow::ensure!(
        manifest.len() <= MAX_MANIFEST_BYTES,
        "the manifest is {} bytes, over the cap of {MAX_MANIFEST_BYTES}",
        manifest.len()
    );
    let m: Manifest =
        serde_json::from_slice(manifest).map_err(|e| anyhow::anyhow!("not an OCI image manifest: {e}"))?;
    anyhow::ensure!(
        m.schema_version == 2,
        "manifest schemaVersion {} (expected 2)",
        m.schema_version
    );
    if let Some(t) = &m.media_type {
        anyhow::ensure!(
            t == MANIFEST_MEDIA_TYPE,
            "manifest media type {t:?}: not a Wasm artifact (expected {MANIFEST_MEDIA_TYPE}; an image index or a container image is not a plugin)"
        );
    }
    anyhow::ensure!(
        m.config.media_type == CONFIG_MEDIA_TYPE,
        "config media type {:?}: not a Wasm artifact (expected {CONFIG_MEDIA_TYPE})",
        m.config.media_type
    );
    let [layer] = m.layers.as_slice() else {
        anyhow::bail!(
            "{} layers: a Wasm artifact has exactly one {LAYER_MEDIA_TYPE} layer",
            m.layers.len()
        );
    };
    anyhow::ensure!(
        layer.media_type == LAYER_MEDIA_TYPE,
        "layer media type {:?}: not a Wasm artifact (expected {LAYER_MEDIA_TYPE})",
        layer.media_type
    );
    anyhow::ensure!(
        layer.size <= max_bytes,
        "the component is {} bytes, over the cap of {} MiB",
        layer.size,
        max_bytes >> 20
    );
    Ok((Digest::parse(&layer.digest)?, layer.size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: the preamble of the component encoding.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";
    const CORE_MODULE: &[u8] = b"\0asm\x01\0\0\0";

    #[test]
    fn builds_the_wasm_layout_and_reads_it_back() {
        let built = build(EMPTY_COMPONENT, None).unwrap();
        let m: serde_json::Value = serde_json::from_slice(&built.manifest).unwrap();
        assert_eq!(m["mediaType"], MANIFEST_MEDIA_TYPE);
        assert_eq!(m["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(m["layers"][0]["mediaType"], LAYER_MEDIA_TYPE);
        let c: serde_json::Value = serde_json::from_slice(&built.config).unwrap();
        assert_eq!(c["architecture"], "wasm");
        assert_eq!(c["os"], "wasip2");
        assert_eq!(c["layerDigests"][0], Digest::of(EMPTY_COMPONENT).to_string());
        let (digest, size) = component_layer(&built.manifest, 1 << 20).unwrap();
        assert_eq!(
            (digest, size),
            (Digest::of(EMPTY_COMPONENT), EMPTY_COMPONENT.len() as u64)
        );
    }

    #[test]
    fn refuses_a_core_module_and_garbage() {
        let e = build(CORE_MODULE, None).err().unwrap().to_string();
        assert!(e.contains("not a component"), "{e}");
        assert!(build(b"hello", None).is_err());
    }

    #[test]
    fn refuses_other_layouts_and_oversized_layers() {
        let built = build(EMPTY_COMPONENT, None).unwrap();
        let e = component_layer(&built.manifest, 4).unwrap_err().to_string();
        assert!(e.contains("over the cap"), "{e}");
        let mut m: serde_json::Value = serde_json::from_slice(&built.manifest).unwrap();
        m["config"]["mediaType"] = "application/vnd.oci.image.config.v1+json".into();
        let e = component_layer(&serde_json::to_vec(&m).unwrap(), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("config media type"), "{e}");
        m["config"]["mediaType"] = CONFIG_MEDIA_TYPE.into();
        let layer = m["layers"][0].clone();
        m["layers"] = serde_json::json!([layer, layer]);
        let e = component_layer(&serde_json::to_vec(&m).unwrap(), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly one"), "{e}");
    }
}
