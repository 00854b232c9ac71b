//! Which plugins report policy results, for the report writer: a plugin
//! reports when its component imports `wink:plugin/report`, or when it
//! admits in audit mode (its denials are results); it has settled
//! when its current instance was replayed the cache and said `on-synced`
//! (the aggregator saw it). Owns only that census, and which team a team
//! plugin is (its results and its metrics' info say it).

use super::PluginManager;
use super::lifecycle::PluginState;
use crate::reports::Census;

impl PluginManager {
    /// Where plugins' policy results are gathered.
    pub fn reports(&self) -> &crate::reports::Aggregator {
        &self.options.reports
    }

    /// Say that plugin `name` is the team `team`'s (its namespace; none:
    /// the operator's plugin): its results carry the team
    /// ([`crate::reports::aggregate::TEAM_PROPERTY`]).
    pub fn give_team(&self, name: &str, team: Option<&str>) {
        self.options.reports.set_team(name, team);
    }

    /// The team plugin `name` is, when it is a team plugin.
    pub fn team_of(&self, name: &str) -> Option<String> {
        self.options.reports.team(name)
    }

    /// The plugins that report, and those not settled yet. A quarantined
    /// plugin is not waited for; a restarting one is.
    pub async fn report_census(&self) -> Census {
        let plugins = self.plugins.lock().await;
        let mut census = Census::default();
        for (name, r) in plugins.iter() {
            // Audit mode turns a plugin's admission denials into results.
            let audits_admission =
                r.admission.is_some() && r.instance.write_scope().get().is_some_and(|a| a.audit());
            if !audits_admission && !crate::loader::imports_report(r.instance.pre(), r.instance.engine()) {
                continue;
            }
            if matches!(r.lifecycle.state(), PluginState::Quarantined(_)) {
                continue;
            }
            census.reporters += 1;
            let settled =
                !r.instance.is_crashed() && self.options.reports.synced_at(name, r.instance.id()).is_some();
            if !settled {
                census.unsettled.push(name.clone());
            }
        }
        census
    }
}
