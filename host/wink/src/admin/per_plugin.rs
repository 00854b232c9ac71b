//! One histogram family from histograms each plugin keeps apart (its
//! instance's call durations, its work queue's waits): one `# HELP`/`# TYPE`
//! header, then each plugin's series labelled `plugin`, as the exposition
//! format requires of one metric family. A sub-registry per plugin would
//! repeat the header per plugin. Owns only this encoding.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;

/// The histograms of one family, by plugin.
#[derive(Debug)]
pub(super) struct PerPlugin<H> {
    name: &'static str,
    help: &'static str,
    histograms: Vec<(String, H)>,
}

impl<H> PerPlugin<H> {
    /// An empty family named `name` (without `wink_`'s prefix, which the
    /// registry adds).
    pub(super) fn new(name: &'static str, help: &'static str) -> Self {
        PerPlugin {
            name,
            help,
            histograms: Vec::new(),
        }
    }

    /// `plugin`'s histogram (shared, not copied: a clone reads the same
    /// buckets).
    pub(super) fn push(&mut self, plugin: &str, histogram: H) {
        self.histograms.push((plugin.to_string(), histogram));
    }
}

impl<H: EncodeMetric + std::fmt::Debug + Send + Sync + 'static> Collector for PerPlugin<H> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.histograms.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(self.name, self.help, None, MetricType::Histogram)?;
        for (plugin, histogram) in &self.histograms {
            let labels = [("plugin", plugin.as_str())];
            histogram.encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
    use prometheus_client::registry::Registry;

    #[test]
    fn one_header_for_every_plugins_series() {
        let mut family = PerPlugin::new("plugin_handler_seconds", "Duration of calls");
        for (plugin, secs) in [("a", 0.001), ("b", 0.5)] {
            let h = Histogram::new(exponential_buckets(0.0001, 4.0, 4));
            h.observe(secs);
            family.push(plugin, h);
        }
        let mut registry = Registry::with_prefix("wink");
        registry.register_collector(Box::new(family));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert_eq!(
            text.matches("# TYPE wink_plugin_handler_seconds histogram")
                .count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.matches("# HELP wink_plugin_handler_seconds").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(r#"wink_plugin_handler_seconds_count{plugin="a"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"wink_plugin_handler_seconds_count{plugin="b"} 1"#),
            "{text}"
        );
        let empty = PerPlugin::<Histogram>::new("none", "nothing");
        let mut registry = Registry::default();
        registry.register_collector(Box::new(empty));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(!text.contains("none"), "{text}");
    }
}
